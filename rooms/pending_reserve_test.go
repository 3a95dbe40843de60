package rooms_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestContactFillingTheShareLeavesOtherRoomsTheirReserve: node 1, a contact
// of node 0, made four rooms with it and answers node 0's catch-ups there
// with events of its own key (no stranger's share applies) whose parent
// never comes: they fill the node's pending share. In a room node 2 made,
// an honest event that comes before its parent is still held (each pool's
// reserve), and stored once its parent comes. A review found the first
// build of the share let one contact stop every other room from holding
// any event ahead of its parent.
func TestContactFillingTheShareLeavesOtherRoomsTheirReserve(t *testing.T) {
	const nRooms, perSync = 4, rooms.DefaultPendingEvents
	nt := nodetest.Start(t, 3)
	nt.Befriend(t, 1, 0)
	nt.Befriend(t, 2, 0)
	ctx := context.Background()
	waitConnected(t, nt, 1, 0)
	waitConnected(t, nt, 2, 0)
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
	honest, err := mgr(nt, 2).Create(ctx, "honest", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr(nt, 2).Invite(ctx, honest, nt.ID(0), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	for _, id := range append(ids, honest) {
		nt.WaitFor(30*time.Second, func() bool { return hasJoined(nt, 0, id) }, "node 0 to join %s", id)
	}

	// Node 2 posts two messages node 0 does not get.
	nt.Partition([]int{0, 1}, []int{2})
	e1, err := mgr(nt, 2).Say(ctx, honest, rooms.SayArgs{Agent: identity.HumanAgent, Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := mgr(nt, 2).Say(ctx, honest, rooms.SayArgs{Agent: identity.HumanAgent, Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	w1, err := mgr(nt, 2).Wire(honest, e1)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := mgr(nt, 2).Wire(honest, e2)
	if err != nil {
		t.Fatal(err)
	}

	key := nt.Node(1).Host().Peerstore().PrivKey(nt.ID(1))
	body := []byte("x")
	var seq atomic.Uint64
	orphan := func(room identity.RoomID) []byte {
		var parent rooms.ID
		_, _ = rand.Read(parent[:])
		e := rooms.Event{Room: room, Author: nt.ID(1), Agent: identity.HumanAgent, Seq: 1000 + seq.Add(1), Parents: []rooms.ID{parent}, Depth: 5,
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
		for range perSync / 256 {
			var b rooms.Batch
			for range 256 {
				b.Events = append(b.Events, orphan(h.Room))
			}
			if rooms.WriteFrame(s, &b) != nil {
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
