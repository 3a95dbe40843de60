package rooms_test

import (
	"context"
	"fmt"
	"slices"
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
