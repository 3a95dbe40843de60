package rooms_test

import (
	"testing"
	"time"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// A peer that disconnects leaves the room's mesh (GossipSub drops it
// without a Prune), so the first post after the reconnection, published
// while the mesh is empty, nudges the member to catch up: it arrives
// without anti-entropy, which is turned down to hourly here.
func TestDisconnectLeavesMeshAndPostStillArrives(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Hour
	}))
	id := openRoom(t, nt, 1)
	nt.WaitFor(20*time.Second, func() bool { return mgr(nt, 0).MeshHas(id, nt.ID(1)) }, "node 0's mesh to hold node 1")

	nt.Partition([]int{0}, []int{1})
	nt.WaitFor(20*time.Second, func() bool { return !mgr(nt, 0).MeshHas(id, nt.ID(1)) }, "node 0's mesh to drop node 1 after the disconnection")
	nt.Heal()
	say(t, nt, 0, id, "after the reconnection")
	// create, invite, join, the message.
	waitConverged(t, nt, id, 4, 30*time.Second, 0, 1)
}
