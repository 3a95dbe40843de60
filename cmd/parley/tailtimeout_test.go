package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `room tail` waits for the node's first answer no longer than --timeout,
// as every other command does: a node that takes the connection but does
// not answer (hung, or stopped with SIGSTOP) makes the tail fail saying
// the node did not answer, not hang forever. Before, the tail had no
// bound and hung; now --timeout bounds the wait for the answer's headers.
func TestCLITailHonoursTimeout(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	d := up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "room", "create", "r1"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	if err := d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Let the node go before up's cleanup sends it SIGTERM.
	t.Cleanup(func() { _ = d.cmd.Process.Signal(syscall.SIGCONT) })
	// Control: a plain command gives up after --timeout.
	if _, errs, code := run(t, "--home", home, "--timeout", "2s", "room", "log", "r1"); code == 0 || !strings.Contains(errs, "did not answer") {
		t.Fatalf("room log on a stopped node: exit %d, %q", code, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, errs, code := runPrepared(t, exec.CommandContext(ctx, parleyBin, "--home", home, "--timeout", "2s", "room", "tail", "r1"))
	if ctx.Err() != nil {
		t.Fatalf("room tail --timeout 2s on a node that does not answer was still waiting after %v (killed); stderr %q", time.Since(start).Round(time.Second), errs)
	}
	if code == 0 || !strings.Contains(errs, "did not answer") {
		t.Fatalf("room tail on a node that does not answer: exit %d, stderr %q", code, errs)
	}
}
