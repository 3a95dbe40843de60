package names_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/discovery"
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
