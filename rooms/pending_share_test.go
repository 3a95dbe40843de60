package rooms_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// roomsWith has node from create n rooms and invite node to into each;
// it waits until node to joined them all.
func roomsWith(t *testing.T, nt *nodetest.Net, from, to, n int, name string) []identity.RoomID {
	t.Helper()
	ctx := context.Background()
	var ids []identity.RoomID
	for k := range n {
		id, err := mgr(nt, from).Create(ctx, fmt.Sprintf("%s%d", name, k), identity.HumanAgent)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mgr(nt, from).Invite(ctx, id, nt.ID(to), identity.HumanAgent); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		nt.WaitFor(30*time.Second, func() bool { return hasJoined(nt, to, id) }, "node %d to join %s", to, id)
	}
	return ids
}

// orphans returns a maker of events of room signed by key (author), each
// with a body of size bytes and one parent that never exists.
func orphans(key crypto.PrivKey, size int) func(room identity.RoomID) []byte {
	author, _ := peer.IDFromPrivateKey(key)
	body := make([]byte, size)
	var seq atomic.Uint64
	return func(room identity.RoomID) []byte {
		var parent rooms.ID
		_, _ = rand.Read(parent[:])
		e := rooms.Event{Room: room, Author: author, Agent: identity.HumanAgent, Seq: 1000 + seq.Add(1), Parents: []rooms.ID{parent},
			Depth: 5, Time: time.Now().UnixMilli(), Kind: rooms.KindMessage, Body: body}
		w, _, err := rooms.Seal(key, &e)
		if err != nil {
			panic(err)
		}
		return w
	}
}

// answerSyncsWith makes node i answer every sync request with count events
// that mk makes for the requested room, per to a batch, and pulls each of
// rooms from it on node j, waiting until node j's room took what came.
func answerSyncsWith(t *testing.T, nt *nodetest.Net, i, j int, ids []identity.RoomID, count, per int, mk func(identity.RoomID) []byte) {
	t.Helper()
	nt.Node(i).Host().SetStreamHandler(rooms.ProtocolSync, func(s network.Stream) {
		defer s.Close()
		h, err := rooms.ReadHello(s, rooms.MaxFrame)
		if err != nil {
			s.Reset()
			return
		}
		for sent := 0; sent < count; sent += per {
			var b rooms.Batch
			for range min(per, count-sent) {
				b.Events = append(b.Events, mk(h.Room))
			}
			if rooms.WriteFrame(s, &b) != nil {
				return
			}
		}
		_ = rooms.WriteFrame(s, &rooms.Batch{End: true})
	})
	ctx := context.Background()
	for _, id := range ids {
		_ = mgr(nt, j).SyncNow(ctx, id, nt.ID(i))
		barrier, _, _ := mgr(nt, j).RoomWaits(id)
		if err := barrier(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemberCannotFillPendingPoolsWithAStrangersEvents: node 1, a contact
// that made several rooms with node 0, answers node 0's catch-ups with
// events of a key no one knows, 60 KiB each, whose parent never comes. A
// pool used to hold up to 16 MiB of them a room, adding up over the rooms
// (the sync path vets an author only once the parents are stored); now
// they are held within each pool's strangers' share, and every room's pool
// within the node's share.
func TestMemberCannotFillPendingPoolsWithAStrangersEvents(t *testing.T) {
	const nRooms = 4
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 1, 0)
	waitConnected(t, nt, 1, 0)
	ids := roomsWith(t, nt, 1, 0, nRooms, "r")
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	answerSyncsWith(t, nt, 1, 0, ids, 150, 1, orphans(key, 60<<10))
	events, bytes := mgr(nt, 0).PendingHeld()
	if events == 0 {
		t.Fatal("no event was pooled: the test no longer sends what it means to")
	}
	if events > nRooms*rooms.StrangerPendingEvents || bytes > nRooms*rooms.StrangerPendingBytes {
		t.Fatalf("the pools hold %d events, %d MiB of a stranger's events over %d rooms; the strangers' share is %d MiB a room",
			events, bytes>>20, nRooms, rooms.StrangerPendingBytes>>20)
	}
	t.Logf("pooled: %d events, %d KiB", events, bytes>>10)
	// A room that closes gives its part back.
	if _, err := mgr(nt, 0).LeaveNode(context.Background(), ids[0], identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		e, _ := mgr(nt, 0).PendingHeld()
		return e < events
	}, "the left room's pool to be given back")
}

// TestContactFillingTheShareLeavesOtherRoomsTheirReserve: node 1, a contact
// of node 0, made four rooms with it and answers node 0's catch-ups there
// with events of its own key (no stranger's share applies) whose parent
// never comes: they fill the node's pending share. In a room node 2 made,
// an honest event that comes before its parent is still held (each pool's
// reserve), and stored once its parent comes. A review found the first
// build of the share let one contact stop every other room from holding
// any event ahead of its parent.
func TestContactFillingTheShareLeavesOtherRoomsTheirReserve(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.Befriend(t, 1, 0)
	nt.Befriend(t, 2, 0)
	waitConnected(t, nt, 1, 0)
	waitConnected(t, nt, 2, 0)
	ids := roomsWith(t, nt, 1, 0, 4, "r")
	honest := roomsWith(t, nt, 2, 0, 1, "honest")[0]

	// Node 2 posts two messages node 0 does not get.
	nt.Partition([]int{0, 1}, []int{2})
	e1 := say(t, nt, 2, honest, "one")
	e2 := say(t, nt, 2, honest, "two")
	w1, err := mgr(nt, 2).Wire(honest, e1)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := mgr(nt, 2).Wire(honest, e2)
	if err != nil {
		t.Fatal(err)
	}

	answerSyncsWith(t, nt, 1, 0, ids, rooms.DefaultPendingEvents, 256, orphans(nt.Node(1).Host().Peerstore().PrivKey(nt.ID(1)), 1))
	events, bytes := mgr(nt, 0).PendingHeld()
	t.Logf("node 0's pools hold %d events, %d KiB, all from node 1's four rooms", events, bytes>>10)

	if err := mgr(nt, 0).ProcessBatch(honest, w2); err != nil {
		t.Fatal(err)
	}
	if err := mgr(nt, 0).ProcessBatch(honest, w1); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr(nt, 0).Wire(honest, e1); err != nil {
		t.Fatal("parent not stored")
	}
	if _, err := mgr(nt, 0).Wire(honest, e2); err != nil {
		t.Fatalf("node 2's honest event, which came before its parent, was dropped: the honest room could pool nothing (share %d events, %d MiB held by node 1's rooms)", events, bytes>>20)
	}
}

// TestAdmittedAuthorsPooledEventsCountAsAMembers: node 0 gets a post of
// node 2, a stranger to it, before node 2's invite and the post's parent:
// it waits as a stranger's. Once the invite is stored, node 2 is a member
// node 0 takes events from, and the post counts as a member's: a flood of
// a fresh key's events whose parents never come, more than the strangers'
// share, does not evict it, and it is stored once its parent comes.
// Before, it kept the stranger's mark until it left the pool and was
// evicted first.
func TestAdmittedAuthorsPooledEventsCountAsAMembers(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.Befriend(t, 1, 0)
	nt.Befriend(t, 1, 2)
	waitConnected(t, nt, 1, 0)
	waitConnected(t, nt, 1, 2)
	ctx := context.Background()
	id := roomsWith(t, nt, 1, 0, 1, "r")[0]
	waitConverged(t, nt, id, 3, 30*time.Second, 0, 1)

	// Node 0 is away while node 1 invites node 2 and node 2 posts.
	nt.Partition([]int{0}, []int{1, 2})
	inv, err := mgr(nt, 1).Invite(ctx, id, nt.ID(2), identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return hasJoined(nt, 2, id) }, "node 2 to join")
	one := say(t, nt, 2, id, "one")
	two := say(t, nt, 2, id, "two")
	wire := func(eid rooms.ID) []byte {
		t.Helper()
		w, err := mgr(nt, 2).Wire(id, eid)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	parents, err := mgr(nt, 2).Parents(id, two)
	if err != nil || !slices.Equal(parents, []rooms.ID{one}) {
		t.Fatalf("post two's parents %v (%v), want post one alone", parents, err)
	}
	var joinAndOne [][]byte
	for _, eid := range logIDs(t, nt, 2, id) {
		if eid != inv && eid != two && !slices.Contains(logIDs(t, nt, 0, id), eid) {
			joinAndOne = append(joinAndOne, wire(eid))
		}
	}

	if err := mgr(nt, 0).ProcessBatch(id, wire(two)); err != nil {
		t.Fatal(err)
	}
	if n := mgr(nt, 0).PendingStrangers(id); n != 1 {
		t.Fatalf("the pool holds %d strangers' events, want node 2's post", n)
	}
	if err := mgr(nt, 0).ProcessBatch(id, wire(inv)); err != nil {
		t.Fatal(err)
	}
	if ms, _ := mgr(nt, 0).Members(id); !slices.Contains(ms, nt.ID(2)) {
		t.Fatal("node 2's invite did not make it a member")
	}
	if n := mgr(nt, 0).PendingStrangers(id); n != 0 {
		t.Fatalf("node 2 is admitted, and the pool still holds %d events as strangers'", n)
	}

	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	mk := orphans(key, 1)
	var flood [][]byte
	for range 2 * rooms.StrangerPendingEvents {
		flood = append(flood, mk(id))
	}
	if err := mgr(nt, 0).ProcessBatch(id, flood...); err != nil {
		t.Fatal(err)
	}
	if n := mgr(nt, 0).PendingStrangers(id); n != rooms.StrangerPendingEvents {
		t.Fatalf("the pool holds %d strangers' events, want the strangers' share (%d)", n, rooms.StrangerPendingEvents)
	}
	if err := mgr(nt, 0).ProcessBatch(id, joinAndOne...); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr(nt, 0).Wire(id, two); err != nil {
		t.Fatal("node 2's post, pooled before its invite came, was evicted for a stranger's events after it")
	}
}
