package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Regression: an ask of a room is owed by the other agents in it (one that
// comes in later does not owe what was asked before). In a room where the
// asker is alone, `room ask` posted the ask and waited out its whole --wait
// for a reply that could not come; it is refused at once, saying why.
func TestCLIRoomAskInARoomWithNoOneElseIsRefused(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "room", "create", "alone"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	start := time.Now()
	_, errs, code := run(t, "--home", home, "room", "ask", "alone", "anyone?", "--wait", "8s")
	took := time.Since(start)
	if code == 0 || took > 5*time.Second {
		t.Fatalf("room ask in a room no one else is in: exit %d after %s: %q; want it refused (or told) at once", code, took.Round(time.Millisecond), errs)
	}
	if !strings.Contains(errs, "nobody else is in room") {
		t.Errorf("room ask in a room no one else is in: %q; want it to say nobody else is in the room", errs)
	}
}
