package contacts_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestCoMemberInviteNeedsAContactToVouch (found by a review): Allowed lets
// in a member node of a room this node is in because "a member invited it,
// so a contact vouched for it" (doc.go). Node 1 (node 3's contact) shares
// another room with node 0 (nobody's contact here but node 2's); were it
// let invite node 0 into node 3's room, node 3, which never met node 0 nor
// any contact of it, would let node 0 in at once, with no user deciding.
// The invite is refused, and node 3 does not take node 0.
func TestCoMemberInviteNeedsAContactToVouch(t *testing.T) {
	nt := startNet(t, 4, nodetest.WithConfig(func(i int, c *node.Config) { c.SyncInterval = time.Second }))
	nt.ConnectAll()
	befriend(t, nt, 0, 2, 0)
	befriend(t, nt, 1, 2, 0)
	befriend(t, nt, 1, 3, 0)
	other := createRoom(t, nt, 2)
	invite(t, nt, 2, 0, other)
	invite(t, nt, 2, 1, other)
	nt.WaitFor(20*time.Second, func() bool { return mgr(nt, 1).SharesRoom(nt.ID(0), nil) }, "node 1 to know node 0 as a co-member")
	if err := svc(nt, 3).Allowed(nt.ID(0)); err == nil {
		t.Fatal("node 3 lets node 0 in before anything")
	}

	ctx := context.Background()
	room, err := mgr(nt, 3).Create(ctx, "node 3's", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	invite(t, nt, 3, 1, room)
	// Node 1 may not bring node 0 in: it holds no consent of node 0's to
	// vouch with.
	_, err = mgr(nt, 1).Invite(ctx, room, nt.ID(0), identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "not a contact")
	if err := svc(nt, 3).Allowed(nt.ID(0)); err == nil {
		t.Fatalf("node 3 lets in node %s, whom no contact of it nor of any member of its room approved", nt.ID(0))
	}
}
