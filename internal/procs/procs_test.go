package procs

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
)

func TestAncestorsOfAChild(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("parents are read on Linux and macOS only")
	}
	// A shell that starts a child of its own and waits: the chain of the
	// grandchild is the shell, then this process, then this process's own
	// ancestors.
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var grandchild int
	buf := make([]byte, 32)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range buf[:n] {
		if c >= '0' && c <= '9' {
			grandchild = grandchild*10 + int(c-'0')
		}
	}
	defer func() {
		if p, err := os.FindProcess(grandchild); err == nil {
			_ = p.Kill()
		}
	}()
	got := Ancestors(grandchild)
	if len(got) < 2 || got[0] != cmd.Process.Pid || got[1] != os.Getpid() {
		t.Fatalf("ancestors of %d: %v, want [%d %d …]", grandchild, got, cmd.Process.Pid, os.Getpid())
	}
	mine := Ancestors(os.Getpid())
	if !slices.Equal(got[2:], mine) {
		t.Fatalf("the grandchild's chain above this process %v is not this process's %v", got[2:], mine)
	}
	if slices.Contains(got, 1) {
		t.Fatalf("the chain holds PID 1: %v", got)
	}
}

func TestAncestorsOfNoProcess(t *testing.T) {
	if got := Ancestors(1 << 30); len(got) != 0 {
		t.Fatalf("a PID no process has: %v", got)
	}
}
