package rooms_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestLeaveReachesAMemberThatIsNoContact: node 0 made a room with nodes 1
// and 2, which are no contacts of each other (co-members only). With node
// 0 away, node 1 leaves: node 2, the only member it can reach, must learn
// the leave, by gossip or by pulling from node 1, which serves the room's
// sync until a member has the leave. Before, node 1 refused node 2's pull
// as a stranger once the room was closed (they shared no open room any
// more), and node 2 counted node 1 in for good whenever the gossip copy
// was missed.
func TestLeaveReachesAMemberThatIsNoContact(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
	}))
	ctx := context.Background()
	waitConnected(t, nt, 0, 1)
	waitConnected(t, nt, 0, 2)
	nt.Befriend(t, 0, 1)
	nt.Befriend(t, 0, 2)
	id, err := mgr(nt, 0).Create(ctx, "trio", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		if _, err := mgr(nt, 0).Invite(ctx, id, nt.ID(i), identity.HumanAgent); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{1, 2} {
		nt.WaitFor(40*time.Second, func() bool { return hasJoined(nt, i, id) }, "node %d to join", i)
	}
	waitConverged(t, nt, id, 5, 40*time.Second, 0, 1, 2)
	nt.ConnectAll()
	waitConnected(t, nt, 1, 2)

	// Node 2 misses the leave's gossip: it is cut off from node 1 while node
	// 1 posts and leaves, and node 0 is away. It lacks more than one round
	// brings (a small page stands for a member far behind): node 1 serves
	// it round after round until the leave is among what it sent (a
	// review found it stopped serving after the first round).
	nt.Crash(0)
	nt.Partition([]int{1}, []int{2})
	for k := range 10 {
		say(t, nt, 1, id, fmt.Sprint("before leaving ", k))
	}
	if _, err := mgr(nt, 1).LeaveNode(ctx, id, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	defer rooms.SetAskLimit(4)()
	nt.Heal()
	nt.ConnectAll()
	nt.WaitFor(60*time.Second, func() bool {
		ms, _ := mgr(nt, 2).Members(id)
		return !slices.Contains(ms, nt.ID(1))
	}, "node 2 to learn node 1's leave from node 1")
}

// TestLeaveOnARefusedMembersPostReachesAMember: node 0 cut off node 2.
// Node 2 posts while node 0 is apart; node 1 leaves, its leave built on
// node 2's post. Node 2 goes away; node 0 can reach only node 1. Node 0's
// Hello says it holds all of node 2's events (it refuses them), so node 1
// serves the leave alone, which node 0 pools, and asks for its parent by
// ID in the next round. A build that counted a left room done after a
// round that served all of the node's events refused that round, and node
// 0 never stored the leave (found by a review).
func TestLeaveOnARefusedMembersPostReachesAMember(t *testing.T) {
	nt, pol := startCutOff(t, 3, 0)
	ctx := context.Background()
	id := openRoom(t, nt, 1, 2)
	nt.ConnectAll()
	waitConnected(t, nt, 1, 2)
	pol.cut(nt.ID(2))
	nt.Partition([]int{0}, []int{1, 2})
	say(t, nt, 2, id, "from the cut-off member")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 1, id, "from the cut-off member") }, "node 1 to hold node 2's post")
	if _, err := mgr(nt, 1).LeaveNode(ctx, id, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return mgr(nt, 1).Leaving(id) }, "node 1 to close the room")
	nt.Crash(2)
	nt.Heal()
	nt.ConnectAll()
	waitConnected(t, nt, 0, 1)
	nt.WaitFor(60*time.Second, func() bool {
		ms, _ := mgr(nt, 0).Members(id)
		return !slices.Contains(ms, nt.ID(1))
	}, "node 0 to store node 1's leave")
}

// TestLeftRoomServedForATimeOnly: a node that left a room serves its sync
// to members for LeavingServeFor at most (members that got the leave by
// gossip never pull it, so none may ever show it holds it), across a
// restart too.
func TestLeftRoomServedForATimeOnly(t *testing.T) {
	var skew atomic.Int64
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		c.RoomClock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	}))
	ctx := context.Background()
	id := openRoom(t, nt, 1)
	nt.Partition([]int{0}, []int{1})
	if _, err := mgr(nt, 1).LeaveNode(ctx, id, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return mgr(nt, 1).Leaving(id) }, "node 1 to close the room")
	nt.Crash(1)
	nt.Restart(1)
	if !mgr(nt, 1).Leaving(id) {
		t.Fatal("a restart stopped serving the left room")
	}
	skew.Store(int64(rooms.LeavingServeFor + time.Hour))
	nt.Heal()
	nt.ConnectAll()
	waitConnected(t, nt, 0, 1)
	if err := mgr(nt, 0).SyncNow(ctx, id, nt.ID(1)); err == nil {
		t.Fatal("node 1 served the room it left past LeavingServeFor")
	}
	if mgr(nt, 1).Leaving(id) {
		t.Fatal("node 1 still counts itself serving the room")
	}
	nt.Crash(1)
	nt.Restart(1)
	if mgr(nt, 1).Leaving(id) {
		t.Fatal("a restart serves the room again")
	}
}
