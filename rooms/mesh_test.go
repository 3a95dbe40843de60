package rooms_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// A peer that disconnects leaves the room's mesh (GossipSub drops it
// without a Prune), so the first post after the reconnection, published
// while the mesh is empty, nudges the member to catch up: it arrives
// without anti-entropy, which startQuietNet turns down to hourly.
func TestDisconnectLeavesMeshAndPostStillArrives(t *testing.T) {
	nt, id := startQuietNet(t)
	nt.Partition([]int{0}, []int{1})
	nt.WaitFor(20*time.Second, func() bool { return !mgr(nt, 0).MeshHas(id, nt.ID(1)) }, "node 0's mesh to drop node 1 after the disconnection")
	nt.Heal()
	say(t, nt, 0, id, "after the reconnection")
	// create, invite, join, the message.
	waitConverged(t, nt, id, 4, 30*time.Second, 0, 1)
}

// An invited node joins the room's topic before it knows the members, so
// its GossipSub mesh forms only at a heartbeat after its catch-up. An
// event posted in between goes to the poster's mesh without the new node,
// and GossipSub's gossip goes only to peers outside the mesh, so once the
// heartbeat grafts the new node nothing but the nudge on the graft tells
// it of the event: it must still arrive, with anti-entropy turned down to
// hourly. Three rooms in a row, as a post may come after the graft.
func TestPostBeforeTheNewMemberIsGraftedArrives(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Hour
	}))
	ctx := context.Background()
	raced := 0
	for round := range 3 {
		id := openRoom(t, nt, 1)
		nt.WaitFor(time.Minute, func() bool { return mgr(nt, 0).MeshHas(id, nt.ID(1)) }, "node 1 in node 0's mesh")
		nt.WaitFor(10*time.Second, func() bool {
			return nt.Node(0).Host().Network().Connectedness(nt.ID(2)) == network.Connected
		}, "node 2 connected to node 0")
		if _, err := mgr(nt, 0).Invite(ctx, id, nt.ID(2), identity.HumanAgent); err != nil {
			t.Fatal(err)
		}
		// create, two invites and two joins: node 2's join is here, so its
		// catch-up is done.
		nt.WaitFor(20*time.Second, func() bool { return eventCount(nt, 0, id) == 5 }, "node 2's join on node 0")
		if !mgr(nt, 0).MeshHas(id, nt.ID(2)) && !mgr(nt, 1).MeshHas(id, nt.ID(2)) {
			raced++
		}
		say(t, nt, 0, id, fmt.Sprintf("right after the join, round %d", round))
		waitConverged(t, nt, id, 6, 15*time.Second, 0, 1, 2)
	}
	t.Logf("%d of 3 posts went out before node 2 was in a mesh", raced)
}
