package rooms_test

import (
	"testing"
	"time"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestSyncOnConnectionRetriedWhileThePeerStarts: node 1 posts while apart
// from node 0 and crashes; it starts again, and node 0 connects to it
// before its rooms serve sync (a node is reachable before its rooms are
// open: it connects to its bootstrap peers meanwhile). Node 0's sync on
// the connection is refused; it is asked again a moment later, so node 0
// gets node 1's posts without waiting for anti-entropy (an hour here).
// Before, nothing asked again: in a review's kill -9 rounds of three CLI
// nodes, a node that stayed up got the restarted node's posts only by
// anti-entropy, 10 to 35 s after the restart (found again with 30 rooms
// restarted in-process: 16 of them were still behind 15 s later).
func TestSyncOnConnectionRetriedWhileThePeerStarts(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Hour
	}))
	nt.Befriend(t, 1, 0)
	waitConnected(t, nt, 1, 0)
	id := roomsWith(t, nt, 0, 1, 1, "r")[0]

	nt.Partition([]int{0}, []int{1})
	say(t, nt, 1, id, "posted before the crash")
	nt.Crash(1)
	nt.Restart(1) // still apart from node 0: it connects to no one
	mgr(nt, 1).ServeSync(false)
	nt.Heal()
	waitConnected(t, nt, 0, 1)
	// Node 0's sync on the connection is refused (nothing else brings the
	// post: node 1's gossip cache went with the crash).
	if nodetest.Poll(2*time.Second, func() bool { return logHas(nt, 0, id, "posted before the crash") }) {
		t.Fatal("node 0 got the post while node 1 served no sync: the test no longer tests what it says")
	}
	mgr(nt, 1).ServeSync(true)
	nt.WaitFor(10*time.Second, func() bool { return logHas(nt, 0, id, "posted before the crash") },
		"node 0 to get node 1's post once node 1 serves sync")
}
