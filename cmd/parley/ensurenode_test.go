package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// lockHome makes a home and a flock(1) process, not started, that holds its
// lock while it runs command.
func lockHome(t *testing.T, command ...string) (string, *exec.Cmd) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	home := filepath.Join(t.TempDir(), "h")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(home, node.LockFileName)
	holder := exec.Command("flock", append([]string{"-x", lock}, command...)...)
	return home, holder
}

// startHolder starts the lock holder, writes pid in the lock file and
// waits for the lock to be held.
func startHolder(t *testing.T, home string, holder *exec.Cmd, pid func() int) {
	t.Helper()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() }) //nolint:errcheck // ours, ending
	nodetest.WaitFor(t, 10*time.Second, func() bool { held, _, _ := node.HomeLockHolder(home); return held }, "the lock to be held")
	if err := os.WriteFile(filepath.Join(home, node.LockFileName), []byte(strconv.Itoa(pid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A home whose lock is held by a process other than the one its lock file
// names, which does not run (a node that died, its lock file taken by
// something else): `parley mcp` fails at once saying so, instead of
// waiting a minute for a node that will never answer.
func TestMCPStopsWaitingForALockHolderThatDoesNotRun(t *testing.T) {
	t.Parallel()
	home, holder := lockHome(t, "sleep", "120")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid
	if err := syscall.Kill(dead, 0); err == nil {
		t.Skipf("pid %d was taken again", dead)
	}
	startHolder(t, home, holder, func() int { return dead })
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	start := time.Now()
	_, errs, code := runPrepared(t, exec.CommandContext(ctx, parleyBin, "--home", home, "mcp"))
	took := time.Since(start)
	if code == 0 || took > 20*time.Second || !strings.Contains(errs, "does not run") || !strings.Contains(errs, strconv.Itoa(dead)) {
		t.Fatalf("parley mcp on a home locked under a pid that does not run: exit %d after %s\n%s", code, took.Round(time.Second), errs)
	}
}

// When the process that holds the home lets it go without a node answering
// (a start that was refused, a node stopping), `parley mcp` starts the node
// itself, instead of failing with "home is in use" naming a process that
// has exited.
func TestMCPStartsTheNodeWhenTheHolderExitsWithoutOne(t *testing.T) {
	t.Parallel()
	home, holder := lockHome(t, "sh", "-c", "read x")
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	startHolder(t, home, holder, func() int { return holder.Process.Pid })
	t.Cleanup(func() { run(t, "--home", home, "down") })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	mcp := exec.CommandContext(ctx, parleyBin, "--home", home, "mcp")
	var errs syncBuffer
	mcp.Stderr = &errs
	if err := mcp.Start(); err != nil {
		t.Fatal(err)
	}
	// Its first start is refused: the home is in use.
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		log, _ := os.ReadFile(filepath.Join(home, node.LogFileName))
		return strings.Contains(string(log), "in use")
	}, "the first start to be refused")
	stdin.Close()
	holder.Wait()      //nolint:errcheck // it exits as told
	werr := mcp.Wait() // the session ends at once: its stdin is empty
	if !strings.Contains(errs.String(), "started a node") {
		t.Fatalf("parley mcp after the home's holder exited (%v):\n%s", werr, errs.String())
	}
	if _, errs, code := run(t, "--home", home, "status"); code != 0 {
		t.Fatalf("no node answers: %s", errs)
	}
}

// A node socket that takes the call and never answers (a stopped node)
// does not hold `parley mcp` forever: it fails saying so.
func TestMCPDoesNotWaitForeverOnASocketThatNeverAnswers(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", node.SocketPath(home))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // never read, never answered
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	start := time.Now()
	_, errs, code := runPrepared(t, exec.CommandContext(ctx, parleyBin, "--home", home, "mcp"))
	took := time.Since(start)
	if code == 0 || took > 20*time.Second || !strings.Contains(errs, "nothing answered") {
		t.Fatalf("parley mcp on a socket that never answers: exit %d after %s\n%s", code, took.Round(time.Second), errs)
	}
}

// A node writes its pid in the home's lock file only once it holds the
// lock, so a start in progress shows the pid of an earlier holder that is
// gone for a moment: `parley mcp` waits a little before it calls the
// holder dead. Here the holder names a dead pid for half a second, then its
// own, then lets the home go: `parley mcp` starts the node itself. (It
// gave up at once, saying the holder did not run.)
func TestMCPWaitsForAHolderThatWritesItsPidLate(t *testing.T) {
	t.Parallel()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid
	home, _ := lockHome(t)
	lock := filepath.Join(home, node.LockFileName)
	holder := exec.Command("flock", "-x", lock, "sh", "-c", `sleep 0.5; echo $$ > "$0"; sleep 1`, lock)
	startHolder(t, home, holder, func() int { return dead })
	t.Cleanup(func() { run(t, "--home", home, "down") })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, errs, code := runPrepared(t, exec.CommandContext(ctx, parleyBin, "--home", home, "mcp"))
	if code != 0 || !strings.Contains(errs, "started a node") {
		t.Fatalf("parley mcp while a holder wrote its pid late: exit %d\n%s", code, errs)
	}
}

// A start of our own that fails by itself (here a key file the node
// refuses) is told as it is, once: no second start, and no word of a
// holder that never was. (It started twice and blamed "the process that
// held the home".)
func TestMCPOwnFailedStartIsToldOnce(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, node.KeyFileName), []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, errs, code := runPrepared(t, exec.CommandContext(ctx, parleyBin, "--home", home, "mcp"))
	log, _ := os.ReadFile(filepath.Join(home, node.LogFileName))
	if code == 0 || strings.Contains(errs, "held the home") || strings.Count(string(log), "key file") != 1 {
		t.Fatalf("parley mcp with a key the node refuses: exit %d\n%s\nnode.log:\n%s", code, errs, log)
	}
}
