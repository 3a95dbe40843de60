package rooms_test

import (
	"context"
	"crypto/rand"
	"errors"
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

// crowded is a room built by crowdedRoom.
type crowded struct {
	id      identity.RoomID
	held    uint64 // the events node 1 holds
	creator crypto.PrivKey
	seq     uint64   // the creator's last seq
	last    rooms.ID // its last event
	depth   uint64   // that event's depth
}

// next is a message of the creator after its last event.
func (c *crowded) next(t *testing.T, text string) []byte {
	t.Helper()
	p, err := peer.IDFromPrivateKey(c.creator)
	if err != nil {
		t.Fatal(err)
	}
	e := rooms.Event{Room: c.id, Author: p, Agent: identity.HumanAgent, Seq: c.seq + 1, Depth: c.depth + 1,
		Time: time.Now().UnixMilli(), Kind: rooms.KindMessage, Body: []byte(text), Parents: []rooms.ID{c.last}}
	w, _, err := rooms.Seal(c.creator, &e)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// crowdVV is the most authors the Hellos of a crowded room's nodes list
// (in place of MaxVV's thousands, which cost a minute of signing and
// checking under the race detector; TestLargestHelloFits checks MaxVV's).
const crowdVV = 64

// crowdedRoom builds, from raw events, a room whose creator (a key no
// node holds) invites nodes 0 and 1 and then authors more keys than one
// of their Hellos can list (crowdVV), each of which posts once. Node 1
// holds it all; node 0 has only opened the room.
func crowdedRoom(t *testing.T, nt *nodetest.Net, authors int) *crowded {
	t.Helper()
	mgr(nt, 0).SetHelloVVLimit(crowdVV)
	mgr(nt, 1).SetHelloVVLimit(crowdVV)
	ck, creator := genKey(t)
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	id := rooms.DeriveRoomID(creator, nonce)
	now := time.Now().UnixMilli()
	var wires [][]byte
	seal := func(k crypto.PrivKey, e rooms.Event) rooms.ID {
		t.Helper()
		w, eid, err := rooms.Seal(k, &e)
		if err != nil {
			t.Fatal(err)
		}
		wires = append(wires, w)
		return eid
	}
	seq, depth := uint64(1), uint64(1)
	last := seal(ck, rooms.Event{Room: id, Author: creator, Agent: identity.HumanAgent, Seq: seq, Depth: depth, Time: now,
		Kind: rooms.KindCreate, Body: append(slices.Clone(nonce), "crowded"...)})
	invite := func(p peer.ID) rooms.ID {
		seq, depth = seq+1, depth+1
		last = seal(ck, rooms.Event{Room: id, Author: creator, Agent: identity.HumanAgent, Seq: seq, Depth: depth, Time: now,
			Kind: rooms.KindInvite, Body: []byte(p), Parents: []rooms.ID{last}})
		return last
	}
	invite(nt.ID(0))
	invite(nt.ID(1))
	for range authors {
		k, p := genKey(t)
		inv := invite(p)
		seal(k, rooms.Event{Room: id, Author: p, Agent: "crowd", Seq: 1, Depth: depth + 1, Time: now,
			Kind: rooms.KindMessage, Body: []byte("here"), Parents: []rooms.ID{inv}})
	}
	m := mgr(nt, 1)
	if err := m.OpenInvited(id, rooms.TopicFor(nonce)); err != nil {
		t.Fatal(err)
	}
	for c := range slices.Chunk(wires, 512) {
		if err := m.ProcessBatch(id, c...); err != nil {
			t.Fatal(err)
		}
	}
	// Node 1 announces its invite with a join of its own.
	held := uint64(len(wires)) + 1
	if !nodetest.Poll(30*time.Second, func() bool { return eventCount(nt, 1, id) == held }) {
		t.Fatalf("node 1 holds %d of the room's %d events", eventCount(nt, 1, id), held)
	}
	if err := mgr(nt, 0).OpenInvited(id, rooms.TopicFor(nonce)); err != nil {
		t.Fatal(err)
	}
	return &crowded{id: id, held: held, creator: ck, seq: seq, last: last, depth: depth}
}

// A member can author more keys into a room than one Hello can list
// (MaxVV; crowdVV here): a node that holds them all then asks for the room a part of
// its authors at a time, and still catches up.
func TestSyncOfMoreAuthorsThanOneHelloLists(t *testing.T) {
	t.Parallel() // waits on timers, sets no package knob
	nt := startNet(t, 2)
	c := crowdedRoom(t, nt, crowdVV+40)
	id, held := c.id, c.held
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Node 0 catches up from scratch: its first Hellos are short, and the
	// last ones know more authors than one lists.
	if err := mgr(nt, 0).SyncNow(ctx, id, nt.ID(1)); err != nil {
		t.Fatalf("catch-up: %v", err)
	}
	// Node 0's join reaches node 1 by gossip or by sync, and node 1's
	// version vector is past one Hello's.
	bothHold(t, nt, id, held+1)
	// Both now list every author; a sync each way still works and brings
	// what the other posted.
	say(t, nt, 1, id, "after the crowd")
	if err := mgr(nt, 0).SyncNow(ctx, id, nt.ID(1)); err != nil {
		t.Fatalf("sync with a full version vector: %v", err)
	}
	bothHold(t, nt, id, held+2)
}

// bothHold waits until nodes 0 and 1 hold n events each, in the same order
// (waitConverged would log version vectors of thousands of authors).
func bothHold(t *testing.T, nt *nodetest.Net, id identity.RoomID, n uint64) {
	t.Helper()
	if !nodetest.Poll(time.Minute, func() bool { return eventCount(nt, 0, id) == n && eventCount(nt, 1, id) == n }) {
		t.Fatalf("nodes 0 and 1 hold %d and %d events, want %d each", eventCount(nt, 0, id), eventCount(nt, 1, id), n)
	}
	if a, b := logIDs(t, nt, 0, id), logIDs(t, nt, 1, id); !slices.Equal(a, b) {
		t.Fatalf("nodes 0 and 1 show different logs (%d and %d events)", len(a), len(b))
	}
}

// A part of the authors whose events are all refused ends that part, not
// the catch-up: the parts after it are still asked for.
func TestRefusedPartLeavesTheNextAsked(t *testing.T) {
	nt := startNet(t, 2)
	c := crowdedRoom(t, nt, crowdVV+40)
	stranger, sp := genKey(t)
	refused := rooms.Event{Room: c.id, Author: sp, Agent: "stranger", Seq: 1, Depth: c.depth + 1,
		Time: time.Now().UnixMilli(), Kind: rooms.KindMessage, Body: []byte("not a member"), Parents: []rooms.ID{c.last}}
	rw, _, err := rooms.Seal(stranger, &refused)
	if err != nil {
		t.Fatal(err)
	}
	good := c.next(t, "in a later part")
	_, goodID, err := rooms.Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	// Node 0 answers node 1's catch-up: the first part with an event the
	// room refuses, every later one with one node 1 lacks.
	var parts atomic.Int32
	nt.Node(0).Host().SetStreamHandler(rooms.ProtocolSync, func(s network.Stream) {
		defer s.Close()
		h, err := rooms.ReadHello(s, rooms.MaxFrame)
		if err != nil {
			s.Reset()
			return
		}
		parts.Add(1)
		ev := good
		if h.From == "" {
			ev = rw
		}
		_ = rooms.WriteFrame(s, &rooms.Batch{Events: [][]byte{ev}})
		_ = rooms.WriteFrame(s, &rooms.Batch{End: true})
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = mgr(nt, 1).SyncNow(ctx, c.id, nt.ID(0))
	if !errors.Is(err, rooms.ErrNoProgress) {
		t.Fatalf("catch-up with a refused part: %v, want ErrNoProgress", err)
	}
	if parts.Load() < 2 {
		t.Fatalf("node 1 asked for %d parts of the authors, want them all", parts.Load())
	}
	if _, err := mgr(nt, 1).Parents(c.id, goodID); err != nil {
		t.Fatalf("node 1 does not hold the later part's event: %v", err)
	}
}
