package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestRelayRefusesFreshKeyOfCutOffInviter: before, the relay's ACL
// (relayAllowed, through wantedPeers) took every room member, so a fresh
// key a cut-off node brought into a shared room got reservations, and was
// kept connected and redialled; now wantedPeers keeps only the members the
// room policy vouches for (sharesRoom), and the relay refuses that key.
// A (0) runs a relay for its contacts and room members. A shares a room
// with B (1) and C (2), then revokes B. B brings X (3), a fresh key of its
// own, into the room; C builds on X's join so A stores it. A's policy does
// not vouch for X (a node this user cut off vouches for nobody), and A's
// relay refuses X a reservation.
func TestRelayRefusesFreshKeyOfCutOffInviter(t *testing.T) {
	const a, b, c, x = 0, 1, 2, 3
	nt := nodetest.Start(t, 4, nodetest.WithConfig(func(i int, cfg *node.Config) {
		cfg.SyncInterval = time.Second
		cfg.Reachability = node.ReachabilityPublic
		if i == a {
			cfg.RelayService = true
		}
	}))
	nt.ConnectAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nt.Befriend(t, b, a)
	nt.Befriend(t, c, a)
	nt.Befriend(t, x, b)
	has := func(i int, id identity.RoomID, kind rooms.Kind, author peer.ID) bool {
		vs, err := nt.Node(i).Rooms().Log(id, 10000, nil)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(vs, func(v rooms.View) bool { return v.Kind == kind && v.Author == author })
	}
	invite := func(i, j int, id identity.RoomID) {
		t.Helper()
		if _, err := nt.Node(i).Rooms().Invite(ctx, id, nt.ID(j), identity.HumanAgent); err != nil {
			t.Fatalf("node %d invites node %d: %v", i, j, err)
		}
		nt.WaitFor(30*time.Second, func() bool { return has(j, id, rooms.KindJoin, nt.ID(j)) }, "node %d to join", j)
	}
	room, err := nt.Node(a).Rooms().Create(ctx, "fed", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	invite(a, b, room)
	invite(a, c, room)
	nt.WaitFor(30*time.Second, func() bool { return has(c, room, rooms.KindJoin, nt.ID(b)) }, "C to hold B's join")
	if _, err := nt.Node(a).Contacts().Revoke(ctx, nt.ID(b).String()); err != nil {
		t.Fatal(err)
	}
	invite(b, x, room)
	nt.WaitFor(30*time.Second, func() bool { return has(c, room, rooms.KindJoin, nt.ID(x)) }, "C to hold X's join")
	if _, err := nt.Node(c).Rooms().Say(ctx, room, rooms.SayArgs{Agent: identity.HumanAgent, Text: "after X"}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return has(a, room, rooms.KindJoin, nt.ID(x)) }, "A to store X's join")
	if nt.Node(a).Rooms().SharesRoom(nt.ID(x), nt.Node(a).Contacts().CutOff) {
		t.Fatal("A vouches for X, brought in by a node A cut off")
	}
	nt.WaitFor(30*time.Second, func() bool {
		return slices.Contains(nt.Node(a).Host().Mux().Protocols(), protocol.ID("/libp2p/circuit/relay/0.2.0/hop"))
	}, "A's relay service to start")
	ai := peer.AddrInfo{ID: nt.ID(a), Addrs: nt.Node(a).Host().Addrs()}
	hx := nt.Node(x).Host()
	if err := hx.Connect(ctx, ai); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Reserve(ctx, hx, ai); err == nil {
		t.Fatal("A's relay gave a reservation to X, a fresh key only a cut-off node vouches for")
	}
}
