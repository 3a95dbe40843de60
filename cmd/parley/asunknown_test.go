package main

import (
	"path/filepath"
	"slices"
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
		// Not in r1, it is refused there until a member invites it.
		if _, errs, code := run(t, "--home", home, "room", "say", "r1", "from helper", "--as", "Helper"); code != 1 || !strings.Contains(errs, "you (helper) are not in room \"r1\"") {
			t.Errorf("room say --as Helper, not invited: exit %d, %q; want it refused as not in the room", code, errs)
		}
		if _, errs, code := run(t, "--home", home, "room", "invite", "r1", "HELPER"); code != 0 {
			t.Fatalf("room invite r1 HELPER: %s", errs)
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

// TestBoardAsUnknownAgent: a board write (claim, its note, release) --as a
// name this node does not know is refused as a post is, and puts nothing on
// the board; before, the claim was taken under the made-up name. A name
// given with capitals is the agent `agent register` made of it, and a
// holder whose registration lapsed still releases its claims.
func TestBoardAsUnknownAgent(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	dir := t.TempDir() // no repository: --project names the board
	up(t, home, "--listen", loopback, "--handle", "alice")
	unknown := func(what, name, errs string, code int) {
		t.Helper()
		if code != 1 || !strings.Contains(errs, `no agent "`+name+`" is registered`) || !strings.Contains(errs, "parley agent list") {
			t.Errorf("%s --as %s: exit %d, stderr %q; want exit 1 naming the agent unknown and `parley agent list`", what, name, code, errs)
		}
	}

	out, errs, code := runIn(t, dir, "--home", home, "claim", "src/a.go", "--project", "proj", "--note", "typo's work", "--as", "reveiwer")
	unknown("claim", "reveiwer", errs, code)
	if strings.Contains(out, "claimed") {
		t.Errorf("claim --as reveiwer printed %q", out)
	}
	_, errs, code = runIn(t, dir, "--home", home, "release", "--all", "--project", "proj", "--as", "reveiwer")
	unknown("release --all", "reveiwer", errs, code)
	_, errs, code = runIn(t, dir, "--home", home, "release", "src/a.go", "--project", "proj", "--as", "Reveiwer")
	unknown("release", "reveiwer", errs, code)
	var bv localapi.BoardView
	runInJSON(t, dir, &bv, "--home", home, "board", "--project", "proj")
	if len(bv.Claims) != 0 {
		t.Errorf("the board holds %+v after refused claims", bv.Claims)
	}
	var bh localapi.BoardHistory
	runInJSON(t, dir, &bh, "--home", home, "board", "history", "--project", "proj")
	if len(bh.Events) != 0 {
		t.Errorf("the board's history holds %+v after refused claims", bh.Events)
	}

	// human, and a registered agent named in capitals, claim; the agent's
	// claim is helper's, and helper releases it once unregistered.
	if _, errs, code := runIn(t, dir, "--home", home, "claim", "docs/", "--project", "proj", "--note", "the guide", "--as", "human"); code != 0 {
		t.Fatalf("claim as human: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "agent", "register", "Helper"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	if _, errs, code := runIn(t, dir, "--home", home, "claim", "src/a.go", "--project", "proj", "--note", "the parser", "--as", "HELPER"); code != 0 {
		t.Fatalf("claim --as HELPER: %s", errs)
	}
	runInJSON(t, dir, &bv, "--home", home, "board", "--project", "proj")
	if len(bv.Claims) != 2 || !slices.ContainsFunc(bv.Claims, func(c localapi.Claim) bool {
		return c.Path == "src/a.go" && strings.HasPrefix(c.Holder, "helper@")
	}) {
		t.Fatalf("the board after claims as human and HELPER: %+v", bv.Claims)
	}
	if _, errs, code := run(t, "--home", home, "agent", "unregister", "helper"); code != 0 {
		t.Fatalf("agent unregister: %s", errs)
	}
	if out, errs, code := runIn(t, dir, "--home", home, "release", "--all", "--project", "proj", "--as", "helper"); code != 0 || !strings.Contains(out, "released src/a.go") {
		t.Fatalf("release of a holder no longer registered: exit %d, %q %q", code, out, errs)
	}
}

// registerAgents registers agents on the node of home, for an hour: board
// writes (claims, releases) are refused as a name the node does not know.
func registerAgents(t *testing.T, home string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, errs, code := run(t, "--home", home, "agent", "register", n, "--ttl", "1h"); code != 0 {
			t.Fatalf("agent register %s: %s", n, errs)
		}
	}
}
