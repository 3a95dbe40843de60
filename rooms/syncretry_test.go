package rooms_test

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
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

// syncSessions is node n's count of sync sessions in role (requester or
// responder) that ended with result ("" for any).
func syncSessions(t *testing.T, n *node.Node, role, result string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, mf := range mfs {
		if mf.GetName() != "parley_room_sync_sessions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var r, res string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "role":
					r = l.GetValue()
				case "result":
					res = l.GetValue()
				}
			}
			if r == role && (result == "" || res == result) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// TestSyncRefusedIsNotAskedAgain: node 1's user cuts node 0 off, so node 1
// refuses node 0's catch-ups (it resets the stream). Node 0 reconnects to
// it: its sync on the connection in each shared room is refused, and is
// not asked again as if node 1 were still starting (before, every room
// asked 5 more times, all rooms at the same moments).
func TestSyncRefusedIsNotAskedAgain(t *testing.T) {
	const nRooms = 3
	t.Cleanup(rooms.SetSyncRetryFirst(50 * time.Millisecond)) // retries, if any, within about 2 s
	pol := &cutOff{out: map[peer.ID]bool{}}
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		if i == 1 {
			c.RoomPolicy = pol
		}
		c.SyncInterval = time.Hour
	}))
	waitConnected(t, nt, 0, 1)
	roomsWith(t, nt, 0, 1, nRooms, "r")
	pol.cut(nt.ID(0))
	nt.Partition([]int{0}, []int{1})
	nt.WaitFor(10*time.Second, func() bool {
		return nt.Node(0).Host().Network().Connectedness(nt.ID(1)) == network.NotConnected
	}, "nodes 0 and 1 to disconnect")
	before := syncSessions(t, nt.Node(1), "responder", "refused")
	refused := func() float64 { return syncSessions(t, nt.Node(1), "responder", "refused") - before }
	nt.Heal()
	waitConnected(t, nt, 0, 1)
	nt.WaitFor(10*time.Second, func() bool { return refused() >= nRooms }, "node 1 to refuse node 0's sync on the connection")
	// The sync on the connection, and one a graft into the room's mesh may
	// start: no more.
	if nodetest.Poll(4*time.Second, func() bool { return refused() > 2*nRooms }) {
		t.Fatalf("node 1 refused %v catch-ups of node 0 in %d rooms: refusals were asked again", refused(), nRooms)
	}
}

// TestSyncRetriesOneChainPerConnectedPeer: node 1 does not serve sync, so
// node 0's catch-ups with it fail as with a node that starts. The first
// failure begins one chain of retries; the failures that come while its
// wait runs (a graft's sync, a nudge's) add none (before, each began a
// wait of its own and counted towards the same 5, so the retries came at
// other times than said and ended early). Node 1's disconnection ends the
// chain and its wait (before, the wait outlived the connection, and the
// count stayed until the next connection).
func TestSyncRetriesOneChainPerConnectedPeer(t *testing.T) {
	t.Cleanup(rooms.SetSyncRetryFirst(time.Hour)) // no wait ends during the test
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Hour
	}))
	nt.Befriend(t, 1, 0)
	waitConnected(t, nt, 1, 0)
	id := roomsWith(t, nt, 0, 1, 1, "r")[0]
	mgr(nt, 1).ServeSync(false)

	failed := func() float64 { return syncSessions(t, nt.Node(0), "requester", "error") }
	chain := func(wantN int, wantWaiting bool) func() bool {
		return func() bool {
			n, waiting := mgr(nt, 0).SyncRetry(id, nt.ID(1))
			return n == wantN && waiting == wantWaiting
		}
	}
	mgr(nt, 0).RequestSync(id, nt.ID(1))
	nt.WaitFor(10*time.Second, chain(1, true), "node 0's failed sync to begin a chain of retries")
	for k := range 3 {
		before := failed()
		mgr(nt, 0).RequestSync(id, nt.ID(1))
		nt.WaitFor(10*time.Second, func() bool { return failed() > before }, "node 0's sync %d to fail", k)
		if n, waiting := mgr(nt, 0).SyncRetry(id, nt.ID(1)); n != 1 || !waiting {
			t.Fatalf("after %d more failures while the first retry waits: %d retries begun (waiting %v), want 1", k+1, n, waiting)
		}
	}
	nt.Partition([]int{0}, []int{1})
	nt.WaitFor(10*time.Second, chain(0, false), "node 1's disconnection to end node 0's chain of retries")
}
