package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// `parley codex` hands an ask to its thread (a turn starts with it): the
// agent has it, as a Stop hook's session has what the hook printed (the
// hook takes what it shows). The route must mark it read, or the node takes
// it for unread: once the limit passes it tells the human the agent was
// not reached, and every later Parley tool result of the thread carries the
// ask again.
func TestWakeCodexRouteMarksWhatItHandedRead(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	r := startCodexRoute(t, home, "")
	select {
	case <-r.h.got: // the invitation
		r.h.release <- struct{}{}
	case <-time.After(30 * time.Second):
		t.Fatal("the invitation was not handed to the thread within 30 s")
	}
	var ask struct {
		AskID string `json:"ask_id"`
	}
	runJSON(t, &ask, "--home", home, "room", "ask", r.room, "is the build green?", "--to", "cx", "--wait", "0s")
	select {
	case in := <-r.h.got:
		if !strings.Contains(in, "is the build green?") {
			t.Fatalf("the hand-out: %q", in)
		}
		r.h.release <- struct{}{}
	case <-time.After(30 * time.Second):
		t.Fatal("the ask was not handed to the thread within 30 s")
	}
	pending := func() bool {
		p, err := r.c.Peek(r.ctx, "cx")
		if err != nil {
			return true
		}
		for _, it := range p.Items {
			// Read, the ask stays owed until answered: a reminder.
			if it.Kind == "ask" && (it.ID == ask.AskID || strings.Contains(it.Text, "is the build green?")) {
				return true
			}
		}
		return false
	}
	if !nodetest.Poll(10*time.Second, func() bool { return !pending() }) {
		p, _ := r.c.Peek(r.ctx, "cx")
		t.Fatalf("the ask handed to the thread is still unread to the node (ask %s): %+v", ask.AskID, p.Items)
	}
}
