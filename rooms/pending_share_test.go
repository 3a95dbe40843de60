package rooms_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestMemberCannotFillPendingPoolsWithAStrangersEvents: node 1, a contact
// that made several rooms with node 0, answers node 0's catch-ups with
// events of a key no one knows, 60 KiB each, whose parent never comes. A
// pool used to hold up to 16 MiB of them a room, adding up over the rooms
// (the sync path vets an author only once the parents are stored); now
// they are held within each pool's strangers' share, and every room's pool
// within the node's share.
func TestMemberCannotFillPendingPoolsWithAStrangersEvents(t *testing.T) {
	const nRooms, perSync = 4, 150
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 1, 0)
	ctx := context.Background()
	waitConnected(t, nt, 1, 0)
	var ids []identity.RoomID
	for k := range nRooms {
		id, err := mgr(nt, 1).Create(ctx, fmt.Sprintf("r%d", k), identity.HumanAgent)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mgr(nt, 1).Invite(ctx, id, nt.ID(0), identity.HumanAgent); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		nt.WaitFor(30*time.Second, func() bool { return hasJoined(nt, 0, id) }, "node 0 to join %s", id)
	}

	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	author, _ := peer.IDFromPrivateKey(key)
	body := make([]byte, 60<<10)
	orphan := func(room identity.RoomID) []byte {
		var parent rooms.ID
		_, _ = rand.Read(parent[:])
		e := rooms.Event{Room: room, Author: author, Agent: "x", Seq: 2, Parents: []rooms.ID{parent}, Depth: 5,
			Time: time.Now().UnixMilli(), Kind: rooms.KindMessage, Body: body}
		w, _, err := rooms.Seal(key, &e)
		if err != nil {
			panic(err)
		}
		return w
	}
	nt.Node(1).Host().SetStreamHandler(rooms.ProtocolSync, func(s network.Stream) {
		defer s.Close()
		h, err := rooms.ReadHello(s, rooms.MaxFrame)
		if err != nil {
			s.Reset()
			return
		}
		for range perSync {
			if rooms.WriteFrame(s, &rooms.Batch{Events: [][]byte{orphan(h.Room)}}) != nil {
				return
			}
		}
		_ = rooms.WriteFrame(s, &rooms.Batch{End: true})
	})
	for _, id := range ids {
		_ = mgr(nt, 0).SyncNow(ctx, id, nt.ID(1))
		barrier, _, _ := mgr(nt, 0).RoomWaits(id)
		if err := barrier(ctx); err != nil {
			t.Fatal(err)
		}
	}
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
	if _, err := mgr(nt, 0).LeaveNode(ctx, ids[0], identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		e, _ := mgr(nt, 0).PendingHeld()
		return e < events
	}, "the left room's pool to be given back")
}
