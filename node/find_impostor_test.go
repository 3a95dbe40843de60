package node_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A stranger with a fresh key runs an agent of the contact's agent name
// under the contact's handle and capability, and one under a look-alike
// handle: a find lists the contact's card first, and both strangers'
// cards show by a name with a tail (the contact keeps its bare handle,
// which resolves to it). Sound as found by the hostile review of
// 2026-12-08.
func TestStrangerAgentUnderAContactsNameIsToldApart(t *testing.T) {
	const a, b, s, l = 0, 1, 2, 3
	handles := []string{"anna", "bob", "bob", "\u0299\u1d0f\u0299"}
	nt := nodetest.Start(t, 4, nodetest.WithConfig(func(i int, c *node.Config) { c.Handle = handles[i] }))
	nt.ConnectAll()
	nt.Befriend(t, b, a)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, i := range []int{b, s, l} {
		if _, err := nt.Node(i).Agents().Register(ctx, agents.RegisterRequest{
			Name: "coder", Capabilities: []string{"go"}, TTLSeconds: 600,
		}); err != nil {
			t.Fatal(err)
		}
	}
	na := nt.Node(a)
	var cs []agents.CardView
	of := func(i int) bool {
		return slices.ContainsFunc(cs, func(c agents.CardView) bool { return c.PeerID == nt.ID(i).String() })
	}
	nt.WaitFor(60*time.Second, func() bool {
		var err error
		cs, err = na.Agents().Find(ctx, "cap:go")
		return err == nil && of(b) && of(s) && of(l)
	}, "A to find the three coders")
	if cs[0].PeerID != nt.ID(b).String() {
		t.Errorf("A's find lists %s@%s first, not its contact's card", cs[0].Agent, cs[0].PeerID)
	}
	nt.WaitFor(20*time.Second, func() bool { return na.Names().Name(nt.ID(b)) == "bob" }, "A to show its contact as bob")
	for _, i := range []int{s, l} {
		n := na.Names().NameOf(nt.ID(i), handles[i])
		tail, ok := strings.CutPrefix(n, handles[i]+"~")
		if !ok || !strings.HasSuffix(nt.ID(i).String(), tail) {
			t.Errorf("the stranger %d whose card claims %q shows as %q beside the contact bob, want it with its tail", i, handles[i], n)
		}
	}
	if p, err := na.Names().Resolve("bob"); err != nil || p != nt.ID(b) {
		t.Errorf("Resolve(bob) = %s, %v; want the contact %s", p, err, nt.ID(b))
	}
}

// A member of a room this node shares that is no contact (brought in by
// a contact) learns nothing of what this node's agents work on: presence
// goes to the contact alone. Sound as found by the hostile review of
// 2026-12-08, where a find took such a member for a contact.
func TestRoomMemberGetsNoPresence(t *testing.T) {
	const a, b, x = 0, 1, 2
	nt, ctx := roomMemberNet(t)
	if _, err := nt.Node(a).Agents().Register(ctx, agents.RegisterRequest{
		Name: "planner", WorkingOn: "the merger nobody may know of", TTLSeconds: 600,
	}); err != nil {
		t.Fatal(err)
	}
	sees := func(i int) bool {
		for _, e := range nt.Node(i).Agents().Who(ctx) {
			if e.PeerID == nt.ID(a).String() {
				return true
			}
		}
		return false
	}
	nt.WaitFor(20*time.Second, func() bool { return sees(b) }, "the contact B to see A's agent")
	// Had A sent it, X would have refused it as a non-contact's.
	if nodetest.Poll(3*time.Second, func() bool {
		return sees(x) || counter(nt, x, "parley_discovery_rejected_total", "presence_not_contact") > 0
	}) {
		t.Fatal("A sent its presence to X, a room member but no contact of A")
	}
}
