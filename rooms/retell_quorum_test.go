package rooms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/rooms"
)

// TestToldBackStaleMemberThenLeaveLearnt: as in
// TestToldBackStaleMemberDoesNotReopenLeftRoomAndFork, a stale member
// (node 2, down when node 1 left) tells node 1, put back on a copy from
// before it joined, the room back while node 0, which holds the leave, is
// down. The room stays provisional (node 0, a member, is not heard yet:
// nothing is posted, no seq taken). Node 0 comes back: its catch-up serves
// node 1 its own leave (a member serves a node that left up to its leave),
// and node 1 drops the room with nothing written. It never posts there.
func TestToldBackStaleMemberThenLeaveLearnt(t *testing.T) {
	nt := contactNet(t, 3)
	ctx := context.Background()
	for _, p := range [][2]int{{0, 1}, {0, 2}, {2, 1}} {
		waitConnected(t, nt, p[0], p[1])
		nt.Befriend(t, p[0], p[1])
	}
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)
	waitConnected(t, nt, 1, 2)

	id := openRoom(t, nt, 1, 2)
	say(t, nt, 1, id, "last words")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 2, id, "last words") }, "node 2 to hold node 1's post")
	nt.Crash(2)
	if _, err := mgr(nt, 1).LeaveNode(ctx, id, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	waitOut(t, nt, 0, 1, id)

	nt.Crash(0)
	restore(nt, 1, old)
	nt.Restart(2)
	waitConnected(t, nt, 1, 2)
	nt.WaitFor(30*time.Second, func() bool { return mgr(nt, 1).Provisional(id) }, "node 2 to tell the room back")
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "too soon"}); err == nil {
		t.Fatal("node 1 posted in a room told back by one member while another is not heard")
	}

	nt.Restart(0)
	waitConnected(t, nt, 1, 0)
	nt.WaitFor(40*time.Second, func() bool { return !mgr(nt, 1).Provisional(id) }, "node 0's catch-up to serve node 1 its leave")
	if _, err := mgr(nt, 1).Get(id); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("the room node 1 left is open after node 0 served it its leave: %v", err)
	}
	if mgr(nt, 1).HasRecord(id) {
		t.Fatal("the room node 1 left was recorded")
	}
}

// shortToldBackWait lowers rooms.ToldBackWait to d for the test: a member
// down for good is waited for that long before the members connected
// confirm a room told back.
func shortToldBackWait(t *testing.T, d time.Duration) {
	t.Helper()
	was := rooms.ToldBackWait.Load()
	rooms.ToldBackWait.Store(int64(d))
	t.Cleanup(func() { rooms.ToldBackWait.Store(was) })
}
