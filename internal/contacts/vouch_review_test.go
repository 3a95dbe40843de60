package contacts_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Allowed lets in a member node of a room this node is in because "a
// member invited it, so a contact vouched for it" (doc.go). Since
// CanInvite lets a stock node invite any co-member, that no longer holds:
// node 1 (node 3's contact) invites node 0, a node it only shares another
// room with (nobody's contact here but node 2's), into node 3's room, with
// no user deciding anything (an agent's parley_invite does the same), and
// node 3, which never met node 0 nor any contact of it, lets node 0 in at
// once, before node 0's user even accepts: node 0 may post to node 3's
// room, sync with it, and hold node 3's invites (8) for its user.
func TestReviewCoMemberInviteNeedsAContactToVouch(t *testing.T) {
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
	// Node 1 brings node 0 in; nobody whose contact node 0 is took part.
	if _, err := mgr(nt, 1).Invite(ctx, room, nt.ID(0), identity.HumanAgent); err != nil {
		t.Logf("node 1 invites node 0: %v", err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		in, err := mgr(nt, 3).Get(room)
		return err == nil && slices.Contains(in.Members, nt.ID(0))
	}, "node 3 to hold node 1's invite of node 0")
	if err := svc(nt, 3).Allowed(nt.ID(0)); err == nil {
		t.Fatalf("node 3 lets in node %s, whom no contact of it nor of any member of its room approved: "+
			"a co-member's invite made it a member vouched for", nt.ID(0))
	}
}
