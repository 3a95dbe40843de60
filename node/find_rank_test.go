package node_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// A find keeps at most 16 cards of a node that is neither this one nor a
// contact, and lists this node's and its contacts' cards first. Before,
// it asked the contact service's Allowed, which also lets in every member
// of a room this node shares (a stranger any member invited): such a
// node's cards were ranked as a contact's, all 20 kept, and listed among
// the contact's (here before them, its handle sorting first), while the
// local API marked each "not a contact".
// A (0) and its contact B (1) share a room into which B brought X (2),
// B's contact and a stranger to A.
func TestFindRanksARoomMembersCardsAsAStrangers(t *testing.T) {
	const a, b, x = 0, 1, 2
	nt, ctx := roomMemberNet(t)
	reg := func(i int, name string) {
		t.Helper()
		if _, err := nt.Node(i).Agents().Register(ctx, agents.RegisterRequest{
			Name: name, Capabilities: []string{"go"}, TTLSeconds: 600,
		}); err != nil {
			t.Fatalf("node %d registers %s: %v", i, name, err)
		}
	}
	reg(b, "coder")
	const many = 20
	for i := range many {
		reg(x, fmt.Sprintf("helper-%02d", i))
	}
	var cs []agents.CardView
	nt.WaitFor(60*time.Second, func() bool {
		var err error
		cs, err = nt.Node(a).Agents().Find(ctx, "cap:go")
		if err != nil {
			return false
		}
		ofX := 0
		for _, c := range cs {
			if c.PeerID == nt.ID(x).String() {
				ofX++
			}
		}
		return ofX >= 16 && slices.ContainsFunc(cs, func(c agents.CardView) bool { return c.PeerID == nt.ID(b).String() })
	}, "A to find B's card and 16 of X's")
	ofX := 0
	for _, c := range cs {
		if c.PeerID == nt.ID(x).String() {
			ofX++
		}
	}
	if ofX > 16 {
		t.Errorf("A's find kept %d cards of X, a room member but no contact (a stranger's node is held to 16)", ofX)
	}
	if cs[0].PeerID != nt.ID(b).String() {
		t.Errorf("A's find lists %s@%s (handle %q) first, before its contact's card", cs[0].Agent, cs[0].PeerID, cs[0].Handle)
	}
}

// roomMemberNet starts A (0), its contact B (1) and X (2), B's contact
// and a stranger to A, that B brought into a room A shares: A's contact
// service lets X in (Allowed) as a room member, but X is no contact of A.
func roomMemberNet(t *testing.T) (*nodetest.Net, context.Context) {
	const a, b, x = 0, 1, 2
	handles := []string{"anna", "bob", "aaa"}
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Handle = handles[i]
		c.SyncInterval = time.Second
	}))
	nt.ConnectAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	nt.Befriend(t, b, a)
	nt.Befriend(t, x, b)
	joined := func(i int, id identity.RoomID, author int) bool {
		vs, err := nt.Node(i).Rooms().Log(id, 10000, nil)
		return err == nil && slices.ContainsFunc(vs, func(v rooms.View) bool { return v.Kind == rooms.KindJoin && v.Author == nt.ID(author) })
	}
	room, err := nt.Node(a).Rooms().Create(ctx, "shared", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(a).Rooms().Invite(ctx, room, nt.ID(b), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return joined(b, room, b) }, "B to join")
	if _, err := nt.Node(b).Rooms().Invite(ctx, room, nt.ID(x), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return joined(a, room, x) }, "A to hold X's join")
	if nt.Node(a).Contacts().Allowed(nt.ID(x)) != nil {
		t.Fatal("A's contact service does not let X in as a room member: the test sets up nothing")
	}
	return nt, ctx
}
