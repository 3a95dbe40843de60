package names_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/frame"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/names"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// Nodes learn each other's handles from their signed cards: a unique
// handle shows alone, a shared one with the shortest telling tail of the
// peer ID, and each name resolves back to its node; a card handed over by
// another node is refused; names outlive a restart.
func TestNamesFromNodeCards(t *testing.T) {
	handles := []string{"alice", "bob", "Bob", "carol"}
	nt := nodetest.Start(t, 4, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Handle = handles[i]
		c.RoomPolicy = rooms.DefaultPolicy{} // invites without contacts
	}))
	nt.ConnectAll()
	// Node 0 learns the names of the nodes it deals with: members of its room.
	ctx := context.Background()
	room, err := nt.Node(0).Rooms().CreateRoom(ctx, "r", "", "human")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		if _, err := nt.Node(0).Rooms().Invite(ctx, room, nt.ID(i), "human"); err != nil {
			t.Fatal(err)
		}
	}
	ns := nt.Node(0).Names()
	nt.WaitFor(30*time.Second, func() bool {
		_, ok1 := ns.Handle(nt.ID(1))
		_, ok2 := ns.Handle(nt.ID(2))
		return ok1 && ok2
	}, "node 0 to learn the handles of nodes 1 and 2")

	if got := ns.Name(nt.ID(0)); got != "alice" {
		t.Errorf("own name: %q", got)
	}
	n1, n2 := ns.Name(nt.ID(1)), ns.Name(nt.ID(2))
	if !strings.HasPrefix(n1, "bob~") || !strings.HasPrefix(n2, "Bob~") || !strings.HasSuffix(nt.ID(1).String(), n1[4:]) {
		t.Fatalf("two nodes with one handle show as %q and %q", n1, n2)
	}
	for i, n := range []string{n1, n2, "alice"} {
		p, err := ns.Resolve(n)
		if err != nil || p != nt.ID((i+1)%3) {
			t.Errorf("Resolve(%q) = %s, %v; want node %d", n, p, err, (i+1)%3)
		}
	}
	if _, err := ns.Resolve("bob"); !errors.Is(err, names.ErrAmbiguous) || !strings.Contains(err.Error(), n1) {
		t.Errorf("Resolve of a shared handle: %v", err)
	}
	if _, err := ns.Resolve("carol"); !errors.Is(err, names.ErrUnknown) {
		t.Errorf("Resolve of an unknown handle: %v", err)
	}
	// On node 1 itself, the room member with its handle shows with its
	// tail, and node 1 keeps the bare handle.
	ns1 := nt.Node(1).Names()
	nt.WaitFor(30*time.Second, func() bool {
		_, ok := ns1.Handle(nt.ID(2))
		return ok
	}, "node 1 to learn the handle of node 2")
	if own, other := ns1.Name(nt.ID(1)), ns1.Name(nt.ID(2)); own != "bob" || other != n2 {
		t.Errorf("on node 1, node 1 shows as %q and node 2 as %q; want bob and %s", own, other, n2)
	}
	if got := names.Short(nt.ID(1)); !strings.HasPrefix(got, "…") || len(got) > 12 {
		t.Errorf("short name %q", got)
	}

	// A stranger (connected, in no room, no contact) is not named, and its
	// card is not taken.
	if h, ok := ns.Handle(nt.ID(3)); ok {
		t.Fatalf("a stranger's handle %q was learned", h)
	}
	w3, err := discovery.SealNodeCard(nt.Node(3).Host().Peerstore().PrivKey(nt.ID(3)), &discovery.NodeCard{Peer: nt.ID(3), Handle: "carol", Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Learn(nt.ID(3), w3); err == nil {
		t.Fatal("a stranger's card was taken")
	}

	// Node 1 cannot hand over a card in node 2's name.
	w, err := discovery.SealNodeCard(nt.Node(2).Host().Peerstore().PrivKey(nt.ID(2)), &discovery.NodeCard{Peer: nt.ID(2), Handle: "mallory", Seq: uint64(time.Now().Add(time.Hour).UnixMilli())})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Learn(nt.ID(1), w); err == nil {
		t.Fatal("a card handed over by another node was taken")
	}
	if h, _ := ns.Handle(nt.ID(2)); h != "Bob" {
		t.Fatalf("node 2's handle became %q", h)
	}

	// Names are kept: after a restart node 0 knows them before it connects.
	nt.Crash(0)
	nt.Partition([]int{0}, []int{1, 2, 3})
	nt.RestartAlone(0)
	ns = nt.Node(0).Names()
	if h, ok := ns.Handle(nt.ID(1)); !ok || h != "bob" {
		t.Fatalf("after a restart, node 1's handle: %q %v", h, ok)
	}
}

// pushCard opens names.PushProtocol from node from to node to and writes
// wire; it returns once node to closed or reset the stream.
func pushCard(t *testing.T, nt *nodetest.Net, from, to int, wire []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := nt.Node(from).Host().NewStream(ctx, nt.ID(to), names.PushProtocol)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := frame.Write(st, wire); err != nil {
		return // refused before the card was read
	}
	_ = st.CloseWrite()
	_, _ = io.Copy(io.Discard, st) // until the other side closes or resets
}

// A card pushed by a room member is taken at once; one pushed by a
// stranger is not, nor a second push from one peer within PushEvery.
func TestPushedCards(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Handle = []string{"alice", "bob", "carol"}[i]
		c.RoomPolicy = rooms.DefaultPolicy{} // invites without contacts
	}))
	nt.ConnectAll()
	ctx := context.Background()
	room, err := nt.Node(0).Rooms().CreateRoom(ctx, "r", "", "human")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(0).Rooms().Invite(ctx, room, nt.ID(1), "human"); err != nil {
		t.Fatal(err)
	}
	ns := nt.Node(0).Names()
	nt.WaitFor(30*time.Second, func() bool {
		h, _ := ns.Handle(nt.ID(1))
		return h == "bob"
	}, "node 0 to hold node 1's card")
	seal := func(i int, handle string, seq uint64) []byte {
		t.Helper()
		w, err := discovery.SealNodeCard(nt.Node(i).Host().Peerstore().PrivKey(nt.ID(i)), &discovery.NodeCard{Peer: nt.ID(i), Handle: handle, Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	later := uint64(time.Now().Add(time.Hour).UnixMilli())

	pushCard(t, nt, 2, 0, seal(2, "carol", later))
	if _, ok := ns.CardSeq(nt.ID(2)); ok {
		t.Fatal("a stranger's pushed card was kept")
	}
	pushCard(t, nt, 1, 0, seal(1, "bobby", later))
	if h, _ := ns.Handle(nt.ID(1)); h != "bobby" {
		t.Fatalf("node 1's pushed card: its handle is %q", h)
	}
	pushCard(t, nt, 1, 0, seal(1, "robert", later+1))
	if h, _ := ns.Handle(nt.ID(1)); h != "bobby" {
		t.Fatalf("a second push within %s was taken: the handle is %q", names.PushEvery, h)
	}
}

// Two room members that reach each other only through a relay (behind
// NATs that allow no hole punching) learn each other's handles over the
// relayed connection. Before, the card's streams were not allowed on a
// limited connection, and each showed the other as …SUFFIX for good.
func TestNamesOverARelay(t *testing.T) {
	const r, a, b = 0, 1, 2
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Handle = []string{"rita", "alice", "bob"}[i]
		c.RoomPolicy = rooms.DefaultPolicy{} // invites without contacts
		c.Reachability = node.ReachabilityPrivate
		if i == r {
			c.Reachability = node.ReachabilityPublic
			c.RelayService, c.RelayOpen = true, true
		}
		if i == a {
			c.Relays = c.Bootstrap // node r
		}
	}))
	nt.BlockDirect(a, b)
	nt.WaitRelayHeld(a, r)
	var circuit []ma.Multiaddr
	for _, ra := range nt.Node(r).Host().Addrs() {
		circuit = append(circuit, ra.Encapsulate(ma.StringCast("/p2p/"+nt.ID(r).String()+"/p2p-circuit")))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nb := nt.Node(b)
	var err error
	if !nodetest.Poll(30*time.Second, func() bool {
		nb.Host().Network().(*swarm.Swarm).Backoff().Clear(nt.ID(a)) // a failed try must dial again
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		err = nb.Connect(dctx, peer.AddrInfo{ID: nt.ID(a), Addrs: circuit})
		return err == nil
	}) {
		t.Fatalf("node %d did not reach node %d through the relay: %v", b, a, err)
	}
	room, err := nb.Rooms().CreateRoom(ctx, "across", "", "human")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nb.Rooms().Invite(ctx, room, nt.ID(a), "human"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		ha, oka := nt.Node(b).Names().Handle(nt.ID(a))
		hb, okb := nt.Node(a).Names().Handle(nt.ID(b))
		return oka && okb && ha == "alice" && hb == "bob"
	}, "the two members to learn each other's handles over the relay")
	if ci, ok := nb.ConnInfo(nt.ID(a)); !ok || !ci.Relayed {
		t.Fatalf("nodes %d and %d: %+v %v, want relayed only", b, a, ci, ok)
	}
}

// A node's contact keeps its bare handle, and NAME@handle reaches it, when a
// room member's handle only looks like it (a Cyrillic а, invited into a room
// by any member): the member shows with its tail, and its bare handle is
// refused naming both nodes, their peer IDs and which one is the contact.
func TestContactKeepsItsHandleAgainstALookAlikeMember(t *testing.T) {
	handles := []string{"xavier", "alice", "\u0430lice"}
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Handle = handles[i]
		c.RoomPolicy = rooms.DefaultPolicy{} // invites without contacts
	}))
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	ctx := context.Background()
	room, err := nt.Node(0).Rooms().CreateRoom(ctx, "r", "", "human")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(0).Rooms().Invite(ctx, room, nt.ID(2), "human"); err != nil {
		t.Fatal(err)
	}
	ns := nt.Node(0).Names()
	nt.WaitFor(30*time.Second, func() bool {
		_, ok1 := ns.Handle(nt.ID(1))
		h2, ok2 := ns.Handle(nt.ID(2))
		return ok1 && ok2 && h2 == handles[2]
	}, "node 0 to learn the handles of its contact and its room member")
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	book := map[string]string{}
	es, err := c.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		book[e.PeerID] = e.Name
	}
	alice, lookalike := book[nt.ID(1).String()], book[nt.ID(2).String()]
	if alice != "alice" || !strings.HasPrefix(lookalike, handles[2]+"~") {
		t.Fatalf("/v1/names: the contact is %q, the look-alike member %q", alice, lookalike)
	}
	if p, err := ns.Resolve("alice"); err != nil || p != nt.ID(1) {
		t.Fatalf("Resolve(alice) = %s, %v; want the contact", p, err)
	}
	_, err = ns.Resolve(handles[2])
	if !errors.Is(err, names.ErrAmbiguous) || !strings.Contains(err.Error(), "alice (peer ID "+nt.ID(1).String()+", a contact)") ||
		!strings.Contains(err.Error(), lookalike+" (peer ID "+nt.ID(2).String()+", a room member)") {
		t.Fatalf("Resolve of the look-alike's bare handle: %v", err)
	}
}
