package rooms_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/poll"
	"github.com/parley-mesh/parley/rooms"
)

// TestPeerHoldsOneServingSlotAtATime: before, node 2, a member, opened a
// few more catch-up streams to node 1 than node 1 has serving slots
// (serveSlots, all rooms of the node together), each a Hello that asks
// for the whole room, and never read the answers; each serveSync blocked
// in its write for the exchange's whole limit (a minute), and node 0, an
// honest member, was answered busy until its retries ran out: one member
// denied the node's catch-up to every other peer in every room. Now a
// node serves one stream of a peer at a time, whatever the room (the
// others wait their turn, busy after serveWait), and a write that the requester takes
// nothing of for serveWait is given up (silenceWriter), so node 0 gets
// the event only node 1 holds.
func TestPeerHoldsOneServingSlotAtATime(t *testing.T) {
	t.Cleanup(rooms.SetSyncSilence(2 * time.Second)) // serveWait: 1 s
	t.Cleanup(rooms.SetSyncRetryFirst(200 * time.Millisecond))
	nt, id, hold := silentNet(t)
	// More than a stream's window of events (yamux: 256 KiB, QUIC: 512
	// KiB) that node 2 asks for and never reads.
	big := strings.Repeat("x", 60_000)
	for k := range 24 {
		say(t, nt, 1, id, fmt.Sprint(k, big))
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	slots := max(1, runtime.GOMAXPROCS(0)/2)
	waitConnected(t, nt, 2, 1) // node 2 may know node 1 only through the room's mesh yet
	for range slots + 2 {
		s, err := nt.Node(2).Host().NewStream(ctx, nt.ID(1), rooms.ProtocolSync)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Reset() })
		if err := rooms.WriteFrame(s, &rooms.Hello{Room: id}); err != nil {
			t.Fatal(err)
		}
		_ = s.CloseWrite()
		// Never read.
	}
	busy := syncSessions(t, nt.Node(1), "responder", "busy")
	hold()
	mgr(nt, 0).RequestSync(id, nt.ID(1))
	got := poll.Until(20*time.Second, func() bool { return logHas(nt, 0, id, "held by node 1 alone") })
	if !got {
		t.Errorf("node 0 did not get node 1's event in 20 s: node 1 answered busy %v times while node 2 held its %d serving slots without reading",
			syncSessions(t, nt.Node(1), "responder", "busy")-busy, slots)
	}
}
