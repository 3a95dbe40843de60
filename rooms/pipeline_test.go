package rooms_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestListenersSeeParentsFirst: node 0's message waits for its fsync
// while node 1's reply to it (sent as soon as node 1 saw the message by
// gossip) is written on node 0. Node 0's listener must still see the
// message before the reply, each event once, and both; the message's
// Say returns only after the fsync.
func TestListenersSeeParentsFirst(t *testing.T) {
	nt := startNet(t, 2)
	room := openRoom(t, nt, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The question must reach node 1 by gossip: a sync serves it only once
	// it is durable.
	nt.WaitFor(time.Minute, func() bool { return mgr(nt, 0).MeshHas(room, nt.ID(1)) }, "node 1 in node 0's mesh")
	// Node 0's fsyncs wait until node 1's reply is stored on node 0.
	release := make(chan struct{})
	var once sync.Once
	mgr(nt, 0).HoldSyncs(func() {
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	defer mgr(nt, 0).HoldSyncs(nil)
	lis, stop, err := mgr(nt, 0).Subscribe(room, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	in, stopIn, err := mgr(nt, 1).Subscribe(room, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer stopIn()

	said := make(chan error, 1)
	go func() {
		_, err := mgr(nt, 0).Say(ctx, room, rooms.SayArgs{Agent: identity.HumanAgent, Text: "question"})
		said <- err
	}()
	var reply rooms.ID
	for v := range in {
		if v.Author == nt.ID(0) && v.Text == "question" {
			id := v.ID
			if reply, err = mgr(nt, 1).Say(ctx, room, rooms.SayArgs{Agent: identity.HumanAgent, Text: "answer", ReplyTo: &id}); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	nt.WaitFor(time.Minute, func() bool {
		_, err := mgr(nt, 0).Event(room, reply)
		return err == nil
	}, "node 0 to store the reply")
	select {
	case err := <-said:
		t.Fatalf("Say returned before its fsync: %v", err)
	default:
	}
	once.Do(func() { close(release) })
	if err := <-said; err != nil {
		t.Fatal(err)
	}
	var order []rooms.View
	for len(order) < 2 {
		select {
		case v := <-lis:
			order = append(order, v)
		case <-ctx.Done():
			t.Fatalf("node 0's listener saw %d events of 2", len(order))
		}
	}
	checkCausal(t, 0, order)
	if order[0].Text != "question" || order[1].Text != "answer" {
		t.Fatalf("node 0's listener saw %q then %q", order[0].Text, order[1].Text)
	}
}

// checkCausal fails if a listener saw an event twice, an author's events
// out of seq order, or a reply before the event it answers.
func checkCausal(t *testing.T, node int, order []rooms.View) {
	t.Helper()
	at := make(map[rooms.ID]int, len(order))
	last := map[peer.ID]uint64{}
	for k, v := range order {
		if _, dup := at[v.ID]; dup {
			t.Fatalf("node %d: event %s seen twice", node, v.ID)
		}
		at[v.ID] = k
		if prev, ok := last[v.Author]; ok && v.Seq != prev+1 {
			t.Fatalf("node %d: %s seq %d seen after seq %d", node, v.Author, v.Seq, prev)
		}
		last[v.Author] = v.Seq
		if v.ReplyTo != nil {
			if _, ok := at[*v.ReplyTo]; !ok {
				t.Fatalf("node %d: reply %q (#%d) seen before the event it answers", node, v.Text, k)
			}
		}
	}
}

// startQuietNet starts two nodes whose anti-entropy runs hourly, with a
// room of both and each in the other's mesh: an event comes by gossip or
// by a sync the room asks for, never by anti-entropy.
func startQuietNet(t *testing.T) (*nodetest.Net, identity.RoomID) {
	t.Helper()
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Hour
	}))
	room := openRoom(t, nt, 1)
	nt.WaitFor(time.Minute, func() bool {
		return mgr(nt, 1).MeshHas(room, nt.ID(0)) && mgr(nt, 0).MeshHas(room, nt.ID(1))
	}, "the mesh")
	return nt, room
}

// stallReader makes node i's subscription readers wait once they hold an
// event; held is closed when the first does. Cleanup lets them go.
func stallReader(t *testing.T, nt *nodetest.Net, i int) (held <-chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	var stuck sync.Once
	h := make(chan struct{})
	mgr(nt, i).HoldTakes(func() {
		stuck.Do(func() { close(h) })
		<-release
	})
	t.Cleanup(func() {
		mgr(nt, i).HoldTakes(nil)
		close(release)
	})
	return h
}

// slowSyncs makes node i's fsyncs of its own events take d more: a slow
// disk, during which the events are not served to a sync yet.
func slowSyncs(t *testing.T, nt *nodetest.Net, i int, d time.Duration) {
	mgr(nt, i).HoldSyncs(func() { <-time.After(d) })
	t.Cleanup(func() { mgr(nt, i).HoldSyncs(nil) })
}

// TestFullSubscriptionLosesNothing: node 0's subscription reader is stuck,
// so its room subscription (two events here) fills and GossipSub drops
// what comes next. Anti-entropy runs only hourly, yet every event reaches
// node 0 while the reader is still stuck: each dropped event makes the
// room fetch from the peer that sent it.
func TestFullSubscriptionLosesNothing(t *testing.T) {
	defer rooms.SetSubBuffer(2)()
	nt, room := startQuietNet(t)
	held := stallReader(t, nt, 0)
	base := eventCount(nt, 0, room)
	const n = 20
	for i := range n {
		say(t, nt, 1, room, fmt.Sprintf("message %d", i))
	}
	waitClosed(t, held, "node 0's reader to take an event")
	nt.WaitFor(time.Minute, func() bool { return eventCount(nt, 0, room) == base+n },
		"node 0 to store all %d events while its reader is stuck (%d)", n, eventCount(nt, 0, room)-base)
	if got := mgr(nt, 0).Overflows(); got < 1 {
		t.Fatalf("overflows counted: %v, want at least 1", got)
	}
	waitConverged(t, nt, room, base+n, 20*time.Second, 0, 1)
}

// TestDroppedEventOfSlowSender: as TestFullSubscriptionLosesNothing, but
// the sender's fsync takes 100 ms, so the sync that an overflow asks for at
// once runs before the sender serves the dropped event (it serves its own
// events once fsynced). The room looks again and syncs until it has it.
func TestDroppedEventOfSlowSender(t *testing.T) {
	defer rooms.SetSubBuffer(2)()
	nt, room := startQuietNet(t)
	held := stallReader(t, nt, 0)
	slowSyncs(t, nt, 1, 100*time.Millisecond)
	base := eventCount(nt, 0, room)
	const n = 10
	for i := range n {
		say(t, nt, 1, room, fmt.Sprintf("message %d", i))
	}
	waitClosed(t, held, "node 0's reader to take an event")
	nt.WaitFor(20*time.Second, func() bool { return eventCount(nt, 0, room) == base+n },
		"node 0 to store all %d events while its reader is stuck (%d)", n, eventCount(nt, 0, room)-base)
}

// TestOwnEventsLeaveSubscriptionFree: node 0's reader has stopped (the
// room is quiet), then node 0 says more events than its subscription
// holds. They must not fill it: node 1's next event comes by gossip, not
// dropped and fetched by sync (anti-entropy hourly, node 1's fsync slow,
// so a sync would miss it).
func TestOwnEventsLeaveSubscriptionFree(t *testing.T) {
	defer rooms.SetSubBuffer(4)()
	nt, room := startQuietNet(t)
	nt.WaitFor(20*time.Second, func() bool { return !mgr(nt, 0).Reading(room) }, "node 0's reader to stop (the room is quiet)")
	for i := range 6 {
		say(t, nt, 0, room, fmt.Sprintf("own %d", i))
	}
	slowSyncs(t, nt, 1, 100*time.Millisecond)
	base := eventCount(nt, 0, room)
	say(t, nt, 1, room, "reply")
	nt.WaitFor(20*time.Second, func() bool { return eventCount(nt, 0, room) == base+1 }, "node 0 to store the reply")
	if got := mgr(nt, 0).Overflows(); got != 0 {
		t.Fatalf("overflows counted: %v, want 0", got)
	}
}

// waitClosed waits up to a minute for ch to close.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestDeliveredEventsReadableAtOnce: others' events are shown once their
// write is queued, before the store has written it; a read of the store
// that a listener makes as soon as it sees an event must still find it.
func TestDeliveredEventsReadableAtOnce(t *testing.T) {
	nt := startNet(t, 2)
	room := openRoom(t, nt, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in, stop, err := mgr(nt, 1).Subscribe(room, 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	const n = 300
	said := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := mgr(nt, 0).Say(ctx, room, rooms.SayArgs{Agent: identity.HumanAgent, Text: fmt.Sprint("m", i)}); err != nil {
				said <- err
				return
			}
		}
		said <- nil
	}()
	seen := 0
	for seen < n {
		select {
		case v, ok := <-in:
			if !ok {
				t.Fatal("node 1's listener fell behind")
			}
			if v.Author != nt.ID(0) {
				continue
			}
			got, err := mgr(nt, 1).Event(room, v.ID)
			if err != nil {
				t.Fatalf("event %d seen but not read: %v", seen, err)
			}
			if got.Text != v.Text {
				t.Fatalf("event %d read as %q, seen as %q", seen, got.Text, v.Text)
			}
			seen++
		case err := <-said:
			if err != nil {
				t.Fatal(err)
			}
			said = nil
		case <-ctx.Done():
			t.Fatalf("node 1 saw %d of %d events", seen, n)
		}
	}
}
