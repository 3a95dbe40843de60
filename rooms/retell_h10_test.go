package rooms_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestToldBackRoomLeftBeforeCopyRejoinedSince (review h10): node 1 left
// node 0's room before the copy of its home was taken; since the copy it
// was invited back by node 0 (a trusted contact), joined again and posted.
// Put back on the copy, node 1 holds the room's record marked left, while
// node 0 counts it in (it spoke since its last admission) and tells it the
// room back with its post. takeTellBack refuses every room node 1 holds a
// record of (holdsRecord → errHeld), left or not, so node 1 never gets back
// a room it joined since the copy: its members count it in for good, it
// reads and posts nothing there. The notice proves more than the record
// knows (an own event of node 1's later than its recorded leave, with an
// invite of node 1), and a catch-up would show it in.
func TestToldBackRoomLeftBeforeCopyRejoinedSince(t *testing.T) {
	nt := contactNet(t, 2)
	ctx := context.Background()
	waitConnected(t, nt, 0, 1)
	nt.Befriend(t, 0, 1)
	nt.Crash(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)

	id := roomOf(t, nt, 0, "leftbefore", 1)
	say(t, nt, 1, id, "first time")
	if _, err := mgr(nt, 1).LeaveNode(ctx, id, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	waitOut(t, nt, 0, 1, id)
	nt.WaitFor(20*time.Second, func() bool {
		_, left := mgr(nt, 1).LeftRoom(id)
		return left
	}, "node 1 to record the room left")

	nt.Crash(1)
	old := nt.CopyData(1) // the room is recorded left here
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)

	if _, err := mgr(nt, 0).Invite(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(40*time.Second, func() bool { return joins(nt, 1, id) == 2 }, "node 1 to join again")
	say(t, nt, 1, id, "back again")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 0, id, "back again") }, "node 0 to hold node 1's post")

	restore(nt, 1, old)
	waitConnected(t, nt, 1, 0)
	if !nodetest.Poll(25*time.Second, func() bool {
		_, err := mgr(nt, 1).Get(id)
		return err == nil
	}) {
		_, left := mgr(nt, 1).LeftRoom(id)
		t.Fatalf("node 1, put back on a copy taken before it rejoined node 0's room, never gets the room back (recorded left: %v) though node 0 counts it in", left)
	}
}
