package rooms_test

import (
	"testing"
	"time"
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
