package rooms_test

import (
	"context"
	"fmt"
	"io"
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
	slots := rooms.ServeSlots()
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

// TestStalledPeerLeavesAServingSlot: node 2, a member, holds a serving slot
// of node 1 with a catch-up it never reads (and more streams waiting their
// turn behind it); node 0's catch-ups with node 1 are still served at once,
// every time. Before, a node of 2 cores had one serving slot, which node 2
// held almost all the time: node 0 waited for serveWait and was answered
// busy. Now a node has at least two slots and a peer holds one at most.
func TestStalledPeerLeavesAServingSlot(t *testing.T) {
	t.Cleanup(rooms.SetSyncSilence(20 * time.Second)) // serveWait: 10 s
	nt, id, hold := silentNet(t)
	big := strings.Repeat("x", 60_000)
	for k := range 24 {
		say(t, nt, 1, id, fmt.Sprint(k, big))
	}
	hold()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	waitConnected(t, nt, 2, 1)
	for range rooms.ServeSlots() + 2 {
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
	if !poll.Until(10*time.Second, func() bool { return mgr(nt, 1).Serving() >= 1 }) {
		t.Fatal("node 1 did not serve node 2's stalled catch-up")
	}
	for k := range 3 {
		start := time.Now()
		s, err := nt.Node(0).Host().NewStream(ctx, nt.ID(1), rooms.ProtocolSync)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.SetDeadline(time.Now().Add(5 * time.Second))
		if err := rooms.WriteFrame(s, &rooms.Hello{Room: id}); err != nil {
			t.Fatal(err)
		}
		_ = s.CloseWrite()
		n, err := io.Copy(io.Discard, s)
		s.Close()
		if err != nil {
			t.Fatalf("catch-up %d of node 0 with node 1 failed after %v (%d bytes) while node 2 held a serving slot: %v",
				k, time.Since(start).Round(time.Millisecond), n, err)
		}
		if n < 24*60_000 {
			t.Fatalf("catch-up %d of node 0 got %d bytes, want the room's %d and more", k, n, 24*60_000)
		}
	}
	if got := mgr(nt, 1).Serving(); got < 1 {
		t.Errorf("node 2's stalled catch-up no longer held a slot (%d taken): the test proved nothing", got)
	}
}
