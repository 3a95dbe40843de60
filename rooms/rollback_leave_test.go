package rooms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestCopyFromBeforeALeaveDoesNotPostInTheRoom: a node restarted on an
// older copy of its data that still has it in a room it left since learns
// its leave from the members and posts nothing there: no event of its
// reaches them after the leave (a post would take the leave's seq, a fork
// of its own chain, in a room it is out of).
func TestCopyFromBeforeALeaveDoesNotPostInTheRoom(t *testing.T) {
	nt := startNet(t, 3)
	id := openRoom(t, nt, 1, 2)
	leaveThenPutBackACopy(t, nt, id)
	nt.Restart(1)
	var err error
	nodetest.Poll(30*time.Second, func() bool {
		_, err = mgr(nt, 1).Say(context.Background(), id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "from the old copy"})
		return !errors.Is(err, rooms.ErrOwnEventsUnknown)
	})
	if err == nil {
		t.Errorf("the node posted in a room it had left before the restart")
	}
	t.Logf("say after the restart: %v", err)
	for _, i := range []int{0, 2} {
		if n := eventCount(nt, i, id); n != 7 {
			t.Fatalf("node %d holds %d events, want 7 (the leave the last of node 1's)", i, n)
		}
	}
	// The leave learned refuses the say at once; the room leaves the list
	// once the batch that brought the leave is done (closeRoom).
	listed := func() bool {
		for _, in := range mgr(nt, 1).List() {
			if in.ID == id {
				return true
			}
		}
		return false
	}
	if !nodetest.Poll(10*time.Second, func() bool { return !listed() }) {
		t.Errorf("the room it left is still listed on the restored node")
	}
}

// TestOfflineCopyFromBeforeALeaveLearnsItLeft: a node restarted on an
// older copy of its data, from before it left a room, with no member
// reachable, posts there (it cannot know), and that post takes its leave's
// seq. Once the members are back it learns its leave all the same (its
// version vector already counts that seq, so only the members serving the
// leave by ID brings it) and posts no more: the room is not split between
// a node that believes it is in and members that refuse all it sends.
func TestOfflineCopyFromBeforeALeaveLearnsItLeft(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		c.OwnEventsWait = 200 * time.Millisecond
	}))
	id := openRoom(t, nt, 1, 2)
	leaveThenPutBackACopy(t, nt, id)
	nt.Partition([]int{0, 2}, []int{1})
	nt.Restart(1)
	sayRetry(t, nt, 1, id, "offline, from the copy")
	nt.Heal()
	// The members agree on one log (8 events if the post is taken, 7 if
	// not), and node 1 ends up out of the room.
	listed := func() bool {
		for _, in := range mgr(nt, 1).List() {
			if in.ID == id {
				return true
			}
		}
		return false
	}
	if !nodetest.Poll(30*time.Second, func() bool { return !listed() }) {
		for _, i := range []int{0, 1, 2} {
			a, c := mgr(nt, i).VVs(id)
			t.Logf("node %d: %d events, accepted %v committed %v", i, eventCount(nt, i, id), a, c)
		}
		t.Fatalf("node 1 still lists the room it left, 30 s after the members are back")
	}
	_, err := mgr(nt, 1).Say(context.Background(), id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "again"})
	if err == nil {
		t.Errorf("node 1 posted again in the room it left, having learnt its leave")
	}
	t.Logf("say once the leave is learnt: %v", err)
	a, b := eventCount(nt, 0, id), eventCount(nt, 2, id)
	t.Logf("members hold %d and %d events", a, b)
	nt.WaitFor(30*time.Second, func() bool {
		return eventCount(nt, 0, id) == eventCount(nt, 2, id) && eventCount(nt, 0, id) >= 7
	}, "members to agree")
}

// leaveThenPutBackACopy has node 1 post in room id, copy its data, leave the
// room (0 and 2 take the leave) and, stopped, get the copy back: from
// before it left.
func leaveThenPutBackACopy(t *testing.T, nt *nodetest.Net, id identity.RoomID) {
	t.Helper()
	say(t, nt, 1, id, "before the copy")
	waitConverged(t, nt, id, 6, 20*time.Second, 0, 1, 2)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	var err error
	nodetest.Poll(30*time.Second, func() bool {
		_, err = mgr(nt, 1).LeaveNode(context.Background(), id, identity.HumanAgent)
		return !errors.Is(err, rooms.ErrOwnEventsUnknown)
	})
	if err != nil {
		t.Fatalf("leave: %v", err)
	}
	waitConverged(t, nt, id, 7, 20*time.Second, 0, 2)
	nt.Crash(1)
	nt.RestoreData(1, old)
}
