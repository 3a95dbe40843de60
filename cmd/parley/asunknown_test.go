package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// TestAsUnknownAgent: --as a name this node does not know (never
// registered, in no room) is refused, where before a post made the typo a
// member of the room for good and an inbox said "nothing waits for you".
// A name given with capitals is the agent `agent register` made of it.
func TestAsUnknownAgent(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback, "--handle", "alice")
	if _, errs, code := run(t, "--home", home, "room", "create", "r1"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}

	t.Run("SayRefused", func(t *testing.T) {
		out, errs, code := run(t, "--home", home, "room", "say", "r1", "hello", "--as", "reveiwer")
		if code == 0 {
			t.Errorf("room say --as a name never registered nor invited: exit 0 (event %s), want a refusal", strings.TrimSpace(out))
		}
		if !strings.Contains(errs, `no agent "reveiwer" is registered`) || !strings.Contains(errs, "parley agent list") {
			t.Errorf("stderr %q: want it to say the agent is unknown and name `parley agent list`", errs)
		}
		var rs []localapi.RoomInfo
		runJSON(t, &rs, "--home", home, "room", "list")
		for _, r := range rs {
			for _, a := range r.Agents {
				if strings.HasPrefix(a, "reveiwer@") {
					t.Errorf("room %s now counts the typo %q as a member agent (stderr %q)", r.Name, a, errs)
				}
			}
		}
		var log []localapi.Event
		runJSON(t, &log, "--home", home, "room", "log", "r1")
		for _, e := range log {
			if strings.Contains(e.Text, "hello") {
				t.Errorf("the refused post is in the room's log: %+v", e)
			}
		}
	})

	t.Run("InboxRefused", func(t *testing.T) {
		out, errs, code := run(t, "--home", home, "inbox", "--as", "nosuchagent")
		if code != 1 || !strings.Contains(errs, `no agent "nosuchagent" is registered`) || strings.Contains(out, "nothing waits") {
			t.Errorf("inbox --as an agent that does not exist: exit %d, %q %q; want exit 1 and the agent named unknown", code, out, errs)
		}
	})

	t.Run("CapitalsAreTheRegisteredAgent", func(t *testing.T) {
		if _, errs, code := run(t, "--home", home, "agent", "register", "Helper"); code != 0 {
			t.Fatalf("agent register: %s", errs)
		}
		if out, errs, code := run(t, "--home", home, "inbox", "--as", "HELPER"); code != 0 {
			t.Errorf("inbox --as HELPER: exit %d, %q %q", code, out, errs)
		}
		if out, errs, code := run(t, "--home", home, "room", "say", "r1", "from helper", "--as", "Helper"); code != 0 {
			t.Errorf("room say --as Helper: exit %d, %q %q", code, out, errs)
		}
		var log []localapi.Event
		runJSON(t, &log, "--home", home, "room", "log", "r1")
		if len(log) == 0 || log[len(log)-1].Text != "from helper" || !strings.HasPrefix(log[len(log)-1].From, "helper@") {
			t.Errorf("the post of --as Helper: %+v, want it from helper", log[len(log)-1:])
		}
	})
}
