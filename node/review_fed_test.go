package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	pbv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	"github.com/libp2p/go-msgio/pbio"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestReviewRelayServesFreshKeyOfCutOffInviter: A (0) runs a relay for its
// contacts and room members. A shares a room with B (1) and C (2), then
// revokes B. B brings X (3), a fresh key of its own, into the room; C
// builds on X's join so A stores it. A's policy no longer vouches for X
// (a node this user cut off vouches for nobody), yet A's relay ACL
// (relayAllowed: wantedPeers lists every room member) gives X a
// reservation, and the sweep never drops it.
func TestReviewRelayServesFreshKeyOfCutOffInviter(t *testing.T) {
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

// TestReviewRelayExpiryTakenOnTheRelaysWord: a configured relay whose
// clock runs ahead (here: 30 days, or a relay that lies) answers a
// reservation with an end far past libp2p's one-hour term. The node
// records that end as is: it shows the reservation held, gives out
// addresses through it and neither asks again (askRelays: ends more than
// a minute away) nor renews it, long after the relay, by its own term,
// dropped it.
func TestReviewRelayExpiryTakenOnTheRelaysWord(t *testing.T) {
	liar, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { liar.Close() })
	const ahead = 30 * 24 * time.Hour
	liar.SetStreamHandler("/libp2p/circuit/relay/0.2.0/hop", func(s network.Stream) {
		defer s.Close()
		rd := pbio.NewDelimitedReader(s, 4096)
		var msg pbv2.HopMessage
		if err := rd.ReadMsg(&msg); err != nil || msg.GetType() != pbv2.HopMessage_RESERVE {
			_ = s.Reset()
			return
		}
		expire := uint64(time.Now().Add(time.Hour + ahead).Unix())
		var addrs [][]byte
		for _, a := range liar.Addrs() {
			addrs = append(addrs, a.Bytes())
		}
		_ = pbio.NewDelimitedWriter(s).WriteMsg(&pbv2.HopMessage{
			Type:        pbv2.HopMessage_STATUS.Enum(),
			Status:      pbv2.Status_OK.Enum(),
			Reservation: &pbv2.Reservation{Expire: &expire, Addrs: addrs},
		})
	})
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) {
		c.Reachability = node.ReachabilityPrivate
		c.Relays = []peer.AddrInfo{{ID: liar.ID(), Addrs: liar.Addrs()}}
	}))
	var st node.RelayState
	nt.WaitFor(30*time.Second, func() bool {
		for _, s := range nt.Node(0).Relays() {
			if s.Relay == liar.ID() && s.Held {
				st = s
				return true
			}
		}
		return false
	}, "the node to hold a reservation on the relay")
	if limit := time.Now().Add(time.Hour + time.Minute); st.Expires.After(limit) {
		t.Fatalf("the node takes its reservation as held until %s (the relay's word), past any term it was granted by its own clock (%s): it renews it only then",
			st.Expires.UTC().Format(time.RFC3339), limit.UTC().Format(time.RFC3339))
	}
}
