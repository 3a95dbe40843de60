package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

type cliAgent struct {
	Name         string   `json:"name"`
	Role         string   `json:"role"`
	WorkingOn    string   `json:"working_on"`
	Capabilities []string `json:"capabilities"`
	State        string   `json:"state"`
	Session      string   `json:"session"`
	Expires      string   `json:"expires"`
	LastSeen     string   `json:"last_seen"`
}

type cliWho struct {
	PeerID    string `json:"peer_id"`
	Handle    string `json:"handle"`
	Name      string `json:"name"`
	Agent     string `json:"agent"`
	State     string `json:"state"`
	WorkingOn string `json:"working_on"`
	LastSeen  string `json:"last_seen"`
	Local     bool   `json:"local"`
}

type cliCard struct {
	PeerID       string   `json:"peer_id"`
	Handle       string   `json:"handle"`
	Name         string   `json:"name"`
	Agent        string   `json:"agent"`
	Capabilities []string `json:"capabilities"`
	// Keys is every key of the card's JSON object.
	Keys map[string]any `json:"-"`
}

func (c *cliCard) UnmarshalJSON(b []byte) error {
	type plain cliCard
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	return json.Unmarshal(b, &c.Keys)
}

func whoOf(t *testing.T, home string) []cliWho {
	t.Helper()
	var v []cliWho
	runJSON(t, &v, "--home", home, "who")
	return v
}

func liveAt(t *testing.T, home, peerID, agent string) (cliWho, bool) {
	t.Helper()
	for _, e := range whoOf(t, home) {
		if e.PeerID == peerID && e.Agent == agent && (e.State == "idle" || e.State == "busy") {
			return e, true
		}
	}
	return cliWho{}, false
}

// Three nodes from the CLI, mDNS off: an agent registered on C with a
// capability is found by `find` on A; A, a contact of C, sees what it works
// on in `who` and B, a stranger, does not; after C is killed, `who` on A
// stops listing C's agent as alive within the agent's TTL. B's handle
// reads like C's (a Cyrillic а): A's `find` shows B's card with its tail
// and C's by C's name (before, find and who printed the cards' handles
// as they came, so B read as the contact carol).
func TestCLIAgentsFindWhoAndCrash(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB, homeC := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "c\u0430rol")
	c := up(t, homeC, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "carol")
	var idA, idB, idC struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &idA, "--home", homeA, "id")
	runJSON(t, &idB, "--home", homeB, "id")
	runJSON(t, &idC, "--home", homeC, "id")

	// A and C become contacts; B stays a stranger.
	runJSON(t, &struct{}{}, "--home", homeA, "contact", "request", c.addr(), "--note", "hi carol")
	nodetest.WaitFor(t, 15*time.Second, func() bool { return stateOf(t, homeC, idA.PeerID) == "pending-in" }, "C to get A's request")
	runJSON(t, &struct{}{}, "--home", homeC, "contact", "approve", idA.PeerID)
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		return stateOf(t, homeA, idC.PeerID) == "active" && stateOf(t, homeC, idA.PeerID) == "active"
	}, "A and C to be contacts")

	// Bad input is refused with one line.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "register", "Bad Name"}, "agent name"},
		{[]string{"agent", "register", "x", "--cap", "c++"}, "capability"},
		{[]string{"agent", "register", "x", "--ttl", "0s"}, "--ttl"},
		{[]string{"agent", "heartbeat", "nosuch"}, "not registered"},
		{[]string{"agent", "unregister", "nosuch"}, "not registered"},
		{[]string{"agent", "heartbeat", "x", "--state", "asleep"}, "idle or busy"},
	} {
		_, errs, code := run(t, append([]string{"--home", homeC}, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Fatalf("%v: exit %d, stderr %q, want one line with %q", tc.args, code, errs, tc.want)
		}
	}

	// Register on C; the registration outlives the command.
	var reg cliAgent
	runJSON(t, &reg, "--home", homeC, "agent", "register", "coder", "--role", "code review", "--cap", "golang",
		"--working-on", "fixing the parser", "--ttl", "60s")
	if reg.Name != "coder" || reg.State != "idle" || !slices.Equal(reg.Capabilities, []string{"golang"}) || reg.WorkingOn != "fixing the parser" {
		t.Fatalf("register: %+v", reg)
	}
	var list []cliAgent
	runJSON(t, &list, "--home", homeC, "agent", "list")
	if len(list) != 1 || list[0].Name != "coder" {
		t.Fatalf("agent list on C: %+v", list)
	}
	if out, _, code := run(t, "--home", homeC, "agent", "list"); code != 0 || !strings.Contains(out, "fixing the parser") {
		t.Fatalf("agent list: %q", out)
	}
	// An update changes what its flags give and keeps the rest.
	runJSON(t, &reg, "--home", homeC, "agent", "register", "coder", "--working-on", "fixing the lexer", "--ttl", "60s")
	if reg.Role != "code review" || !slices.Equal(reg.Capabilities, []string{"golang"}) || reg.WorkingOn != "fixing the lexer" {
		t.Fatalf("the update lost what it did not change: %+v", reg)
	}
	// Without --ttl, the update keeps the agent's TTL (60s), not the 1h
	// default.
	runJSON(t, &reg, "--home", homeC, "agent", "register", "coder", "--working-on", "fixing the parser")
	seen, err1 := time.Parse(time.RFC3339Nano, reg.LastSeen)
	until, err2 := time.Parse(time.RFC3339Nano, reg.Expires)
	if err1 != nil || err2 != nil || until.Sub(seen) != 60*time.Second || reg.WorkingOn != "fixing the parser" {
		t.Fatalf("an update without --ttl: %+v (TTL %s)", reg, until.Sub(seen))
	}

	// A finds it by capability and by name, through the DHT.
	for _, q := range []string{"cap:golang", "coder", "handle:carol"} {
		nodetest.WaitFor(t, 30*time.Second, func() bool {
			var cards []cliCard
			runJSON(t, &cards, "--home", homeA, "find", q)
			return slices.ContainsFunc(cards, func(c cliCard) bool {
				return c.PeerID == idC.PeerID && c.Agent == "coder" && c.Handle == "carol"
			})
		}, "A to find C's agent with %q", q)
	}
	// B's look-alike card shows on A with its tail, C's by C's name.
	runJSON(t, &reg, "--home", homeB, "agent", "register", "mimic", "--cap", "golang", "--ttl", "60s")
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		var cards []cliCard
		runJSON(t, &cards, "--home", homeA, "find", "cap:golang")
		return slices.ContainsFunc(cards, func(c cliCard) bool { return c.PeerID == idB.PeerID })
	}, "A to find B's agent")
	var found []cliCard
	runJSON(t, &found, "--home", homeA, "find", "cap:golang")
	for _, c := range found {
		switch tail, ok := strings.CutPrefix(c.Name, "c\u0430rol~"); {
		case c.PeerID == idC.PeerID && c.Name != "carol":
			t.Errorf("find on A shows the contact carol's card as %q", c.Name)
		case c.PeerID == idB.PeerID && (!ok || !strings.HasSuffix(idB.PeerID, tail)):
			t.Errorf("find on A shows the look-alike stranger's card (handle %+q) as %+q, want it with its tail", c.Handle, c.Name)
		}
	}
	if out, _, _ := run(t, "--home", homeA, "find", "cap:golang"); !strings.Contains(out, "c\u0430rol~") {
		t.Errorf("find (human) on A shows the look-alike without its tail: %q", out)
	} else if !strings.Contains(out, "1 of these on nodes that are not your contacts: reach such an agent as AGENT@PEER_ID") {
		t.Errorf("find (human) on A does not say that the stranger's card is on a node that is no contact: %q", out)
	}
	if _, errs, code := run(t, "--home", homeB, "agent", "unregister", "mimic"); code != 0 {
		t.Fatalf("agent unregister mimic on B: exit %d: %s", code, errs)
	}
	// A card never carries the role: find has no column for it, no key in
	// its JSON, and the help does not call it public.
	var cards []cliCard
	runJSON(t, &cards, "--home", homeA, "find", "coder")
	if len(cards) == 0 {
		t.Fatal("find coder --json found no card")
	}
	for _, c := range cards {
		if _, ok := c.Keys["role"]; ok {
			t.Fatalf("find --json shows a role key on a card: %v", c.Keys)
		}
	}
	if out, _, code := run(t, "--home", homeA, "find", "golang"); code != 0 || !strings.Contains(out, "coder") || strings.Contains(out, "ROLE") {
		t.Fatalf("find (human): exit %d: %q", code, out)
	}
	for _, args := range [][]string{{"agent", "--help"}, {"agent", "register", "--help"}} {
		out, _, _ := run(t, args...)
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "role") && strings.Contains(l, "(public)") || strings.Contains(l, "name, role") {
				t.Fatalf("%v calls the role public: %q", args, l)
			}
		}
	}
	// Finding nothing is an empty list, not an error.
	if out, errs, code := run(t, "--home", homeA, "find", "nothing-here", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("find of nothing: exit %d: %q %q", code, out, errs)
	}
	if out, _, code := run(t, "--home", homeA, "find", "nothing-here"); code != 0 || !strings.Contains(out, "no agents found") {
		t.Fatalf("find of nothing (human): exit %d: %q", code, out)
	}

	// A, a contact, sees what it works on; B, a stranger, finds only the card.
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		e, ok := liveAt(t, homeA, idC.PeerID, "coder")
		return ok && e.WorkingOn == "fixing the parser" && !e.Local && e.Handle == "carol" && e.Name == "carol" && e.LastSeen != ""
	}, "A to see C's agent in who")
	if out, _, _ := run(t, "--home", homeA, "who"); !strings.Contains(out, "coder") || !strings.Contains(out, "carol") {
		t.Fatalf("who (human): %q", out)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _, code := run(t, "--home", homeB, "find", "cap:golang", "--json")
		return code == 0 && strings.Contains(out, idC.PeerID)
	}, "B to find C's public card")
	for _, args := range [][]string{{"who"}, {"find", "coder"}} {
		out, _, _ := run(t, append([]string{"--home", homeB, "--json"}, args...)...)
		if strings.Contains(out, "fixing the parser") {
			t.Fatalf("the stranger sees working_on in %v: %s", args, out)
		}
	}
	if w := whoOf(t, homeB); len(w) != 0 {
		t.Fatalf("who on the stranger: %+v", w)
	}

	// Kill C: A stops listing its agent as alive within the agent's TTL.
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		_, ok := liveAt(t, homeA, idC.PeerID, "coder")
		return !ok
	}, "A to stop listing C's agent after C was killed")
	t.Logf("C's agent left A's who %v after the kill", time.Since(killed).Round(time.Millisecond))
}
