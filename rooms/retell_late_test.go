package rooms_test

import (
	"testing"
	"time"

	"github.com/parley-mesh/parley/rooms"
)

// TestToldBackOnceHeldServedLate: node 1, put back on a copy taken before
// it was in node 0's room, connects to node 0 while its rooms do not serve
// /parley/held/1 yet (a busy machine: the host connects, the rooms start
// late). Node 0's ask of which rooms it lacks gets no answer. Once node 1
// serves the protocol, node 0 asks again and tells it the room back. Before
// the fix, the failed ask was the only one of the connected period: node
// 1 never got the room back while the connection stayed up (the flaky
// TestToldBackRoomLeftAndRejoinedComesBack on a loaded machine).
func TestToldBackOnceHeldServedLate(t *testing.T) {
	nt := contactNet(t, 2)
	waitConnected(t, nt, 0, 1)
	nt.Befriend(t, 0, 1)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)

	id := roomOf(t, nt, 0, "late", 1)
	say(t, nt, 1, id, "mine")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 0, id, "mine") }, "node 0 to hold node 1's post")

	nt.Partition([]int{0}, []int{1})
	restore(nt, 1, old)
	nt.Node(1).Host().RemoveStreamHandler(rooms.ProtocolHeld)
	nt.Heal()
	waitConnected(t, nt, 0, 1)
	// Node 0's ask is refused as not served, sync served: as an older
	// version's answer, it is not made again.
	nt.WaitFor(20*time.Second, func() bool { return mgr(nt, 0).HeldAsks("unanswered") > 0 }, "node 0's ask to get no answer")
	if _, err := mgr(nt, 1).Get(id); err == nil {
		t.Fatal("node 1 took the room back with no ask answered")
	}
	mgr(nt, 1).ServeHeldAgain(nt.Node(1).Host())
	nt.WaitFor(40*time.Second, func() bool {
		_, err := mgr(nt, 1).Get(id)
		return err == nil
	}, "node 1 to take the room back once it serves the ask")
	if !logHas(nt, 1, id, "mine") {
		t.Fatal("the room was confirmed before node 1 held its own events")
	}
}
