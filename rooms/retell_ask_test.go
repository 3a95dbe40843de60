package rooms_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// reconnect cuts node i off from the others and lets it back, so that
// they see a new connection (and ask it which rooms it lacks).
func reconnect(t *testing.T, nt *nodetest.Net, i, other int) {
	t.Helper()
	var rest []int
	for j := 0; j < nt.Len(); j++ {
		if j != i {
			rest = append(rest, j)
		}
	}
	nt.Partition(rest, []int{i})
	nt.WaitFor(10*time.Second, func() bool {
		return nt.Node(other).Host().Network().Connectedness(nt.ID(i)) != network.Connected
	}, "node %d cut off", i)
	nt.Heal()
	nt.ConnectAll()
}

// staysAt fails the test if counter goes past want within d (it polls: a
// count that should not grow can only be watched for a while).
func staysAt(t *testing.T, counter *atomic.Int64, want int64, d time.Duration, what string) {
	t.Helper()
	if nodetest.Poll(d, func() bool { return counter.Load() > want }) {
		t.Fatalf("%s: %d, want %d", what, counter.Load(), want)
	}
}

// TestHeldAnswerNamingARoomTwiceTellsItOnce: a peer answers the ask with
// the one room asked about, 200 times. Before the fix node 0 sent a
// notice for each; now it tells the room once on the connection.
func TestHeldAnswerNamingARoomTwiceTellsItOnce(t *testing.T) {
	nt := startNet(t, 3)
	id := openRoom(t, nt, 2)
	say(t, nt, 2, id, "spoken")
	waitConverged(t, nt, id, 4, 20*time.Second, 0, 2)
	h := nt.Node(2).Host()
	rooms.ServeHeld(h, func([]string) ([]string, bool) {
		lacks := make([]string, 200)
		for i := range lacks {
			lacks[i] = string(id)
		}
		return lacks, true
	})
	var notices atomic.Int64
	h.SetStreamHandler(rooms.ProtocolInvite, func(s network.Stream) {
		notices.Add(1)
		s.Reset()
	})
	reconnect(t, nt, 2, 0)
	nt.WaitFor(20*time.Second, func() bool { return notices.Load() > 0 }, "a notice")
	staysAt(t, &notices, 1, 3*time.Second, "notices for one room on one connection")
}

// TestHeldAskNotRetriedAfterReset: a peer that resets the ask (its policy
// refuses this node, or it does not take the ask) is not asked again on
// the same connection. Before the fix node 0 asked again 1, 2, 4, … s
// later. (The two nodes may dial each other at once as they meet again:
// an ask on each of two connections is no retry.)
func TestHeldAskNotRetriedAfterReset(t *testing.T) {
	t.Parallel() // waits 4 s for what must not happen, sets no package knob
	nt := startNet(t, 3)
	id := openRoom(t, nt, 2)
	say(t, nt, 2, id, "spoken")
	waitConverged(t, nt, id, 4, 20*time.Second, 0, 2)
	var asks, most atomic.Int64 // asks, and the most on one connection
	var mu sync.Mutex
	byConn := map[string]int64{}
	rooms.ServeHeldOn(nt.Node(2).Host(), func(conn string, _ []string) ([]string, bool) {
		asks.Add(1)
		mu.Lock()
		defer mu.Unlock()
		byConn[conn]++
		if byConn[conn] > most.Load() {
			most.Store(byConn[conn])
		}
		return nil, false
	})
	reconnect(t, nt, 2, 0)
	nt.WaitFor(20*time.Second, func() bool { return asks.Load() > 0 }, "an ask")
	staysAt(t, &most, 1, 4*time.Second, "asks on one connection")
}

// TestHeldAnswerTellsNonMembersNothing: node 2, in no room with node 1,
// asks it about a room node 1 is in and one it is not in. Before the fix
// node 1 answered that it lacked only the second, telling node 2 it is in
// the first; now both are answered alike. Node 0, a member of the first,
// still learns node 1 holds it.
func TestHeldAnswerTellsNonMembersNothing(t *testing.T) {
	nt := startNet(t, 3)
	ctx := context.Background()
	private := openRoom(t, nt, 1)
	other, err := mgr(nt, 0).Create(ctx, "other", identity.HumanAgent) // node 1 is not in it
	if err != nil {
		t.Fatal(err)
	}
	asked := []string{string(private), string(other)}
	waitConnected(t, nt, 2, 1)
	lacks, err := rooms.AskHeld(ctx, nt.Node(2).Host(), nt.ID(1), asked)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lacks, asked) {
		t.Errorf("node 1 answered a peer in none of its rooms that it lacks %v of %v", lacks, asked)
	}
	lacks, err = rooms.AskHeld(ctx, nt.Node(0).Host(), nt.ID(1), asked)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lacks, []string{string(other)}) {
		t.Errorf("node 1 answered a member that it lacks %v of %v", lacks, asked)
	}
}

// TestPlainInviteNoticeKeepsItsCap: a notice that tells no room back
// (no own event) may be no larger than an invite notice was before rooms
// were told back (an event and a name); only a room told back may carry
// three events.
func TestPlainInviteNoticeKeepsItsCap(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	id, err := mgr(nt, 0).Create(context.Background(), "r", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	padding := make([]byte, rooms.MaxWire+2048)
	err = rooms.SendTellBack(context.Background(), nt.Node(0).Host(), nt.ID(1), id, []byte{1}, padding, nil)
	if err == nil || !strings.Contains(err.Error(), rooms.ErrTooLarge.Error()) {
		t.Fatalf("a plain notice of two events' size: %v, want it refused as too large", err)
	}
}
