package main

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// A backup stopped with Ctrl-C while the node's copy is under way leaves
// nothing behind in FILE's folder: neither FILE nor the part of the copy
// (whose first bytes are the node's private key) under another name.
func TestCLIBackupInterruptedLeavesNothing(t *testing.T) {
	t.Parallel()
	home := stalledBackupNode(t, "pbi")

	dir := t.TempDir()
	cmd := exec.Command(parleyBin, "--home", home, "backup", filepath.Join(dir, "node.backup"))
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() }) //nolint:errcheck // it may have ended
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		ents, _ := os.ReadDir(dir)
		if len(ents) == 0 {
			return false
		}
		info, err := ents[0].Info()
		return err == nil && info.Size() > 0
	}, "the backup to write its first bytes")
	must(t, cmd.Process.Signal(os.Interrupt))
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		t.Fatal("the backup did not stop on Ctrl-C")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("an interrupted backup left %s in the folder", ents[0].Name())
	}
}

// stalledBackupNode is a home whose node socket answers a backup with the
// first 64 KiB of a copy and then holds the copy open until the test ends:
// a backup caught while the node's copy is under way.
func stalledBackupNode(t *testing.T, prefix string) string {
	t.Helper()
	home, err := os.MkdirTemp("", prefix)
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(home) })
	l, err := net.Listen("unix", nodeSocket(home))
	must(t, err)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold); l.Close() })
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { //nolint:errcheck // ends with the listener
		w.Header().Set("Trailer", "Parley-Backup")
		w.Header().Set("Content-Type", "application/zip")
		w.WriteHeader(http.StatusOK)
		w.Write(make([]byte, 64<<10)) //nolint:errcheck // a stand-in's bytes
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	return home
}
