package rooms_test

import (
	"context"
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// crowdedRoom builds, from raw events, a room whose creator (a key no
// node holds) invites nodes 0 and 1 and then authors more keys than one
// Hello's version vector can list, each of which posts once. Node 1 holds
// it all; node 0 has only opened the room. It returns the room and the
// number of events node 1 holds.
func crowdedRoom(t *testing.T, nt *nodetest.Net, authors int) (identity.RoomID, uint64) {
	t.Helper()
	newKey := func() (crypto.PrivKey, peer.ID) {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p, err := peer.IDFromPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return k, p
	}
	ck, creator := newKey()
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
		k, p := newKey()
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
	return id, held
}

// A member can author more keys into a room than one Hello can list
// (MaxVV): a node that holds them all then asks for the room a part of
// its authors at a time, and still catches up.
func TestSyncOfMoreAuthorsThanOneHelloLists(t *testing.T) {
	nt := startNet(t, 2)
	id, held := crowdedRoom(t, nt, rooms.MaxVV+40)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Node 0 catches up from scratch: its first Hello is short, and the
	// ones after list more authors than MaxVV.
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
