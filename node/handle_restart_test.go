package node_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestHandleChangedWhileAwayReachesContactAfterASecondRestart: a node
// changes its handle across a restart while a contact is away; its card is
// then owed to that contact when it connects. The node restarts once more,
// its handle unchanged, before the contact comes back. Before, the owed
// card was held in memory only: the second start found the card stored as
// handed out (m/card) the same as its own and owed it to nobody, and the
// contact, which had asked for the card before it went away, did not ask
// again for 10 minutes (names.RefetchAfter). Now a card handed out within
// that time before a start is owed again.
func TestHandleChangedWhileAwayReachesContactAfterASecondRestart(t *testing.T) {
	var renamed atomic.Bool
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 && renamed.Load() {
			c.Handle = "bobby"
		}
	}))
	const a, b = 0, 1
	nt.Befriend(t, b, a)
	nt.WaitFor(20*time.Second, func() bool { return nt.Node(a).Names().Name(nt.ID(b)) == "node1" }, "node %d to know node %d's handle", a, b)

	// A is away while B restarts with a new handle, and once more.
	nt.Partition([]int{a}, []int{b})
	nt.Crash(b)
	renamed.Store(true)
	nt.RestartAlone(b)
	nt.Crash(b)
	nt.RestartAlone(b)

	nt.Heal()
	nt.WaitConnected(a, b)
	nt.WaitFor(20*time.Second, func() bool { return nt.Node(a).Names().Name(nt.ID(b)) == "bobby" },
		"node %d, back, to show node %d's new handle (it shows %q)", a, b, nt.Node(a).Names().Name(nt.ID(b)))
}
