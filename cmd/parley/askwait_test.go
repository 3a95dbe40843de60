package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `room ask --wait W` waits W for a reply whatever --timeout is (how long
// the node may take to answer), as `inbox --wait` does: the wait is the
// node's to make, not a node slow to answer. With --wait longer than
// --timeout (say --wait 50s, the most it takes, and the default --timeout
// 30s), it gave up at --timeout and said the node did not answer, though
// the node was well and no reply had come. Before, the ask gave up at
// --timeout; now --timeout is added to the wait.
func TestCLIAskWaitBeyondTimeout(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "agent", "register", "helper"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "create", "r1", "--member", "helper"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	start := time.Now()
	_, errs, code := run(t, "--home", home, "--timeout", "2s", "room", "ask", "r1", "anyone?", "--wait", "5s")
	took := time.Since(start)
	if code != 1 || strings.Contains(errs, "did not answer") || !strings.Contains(errs, "no reply within 5s") || took < 5*time.Second {
		t.Fatalf("room ask --wait 5s --timeout 2s with no reply: exit %d after %v, stderr %q; want exit 1 after 5s saying no reply came", code, took.Round(100*time.Millisecond), errs)
	}
}
