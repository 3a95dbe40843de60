package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestApprovedRequesterReadsBareAsApproveReturns: two strangers named bob
// ask node 0; both read bob~SUFFIX. Once node 0's user approves node 1,
// node 1 is a contact and outranks the other: it reads "bob". The name the
// approval's answer shows (contact approve's confirmation: contactsAPI's
// name, Names().Name, read as Approve returns) must be that one. Here it
// reads bob~SUFFIX: the contact service only wakes the name service's
// loop (ListsChanged does not wait), and Approve returns before the loop
// has asked the lists again; a moment later the name is "bob".
func TestApprovedRequesterReadsBareAsApproveReturns(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Handle = []string{"alice", "bob", "bob"}[i]
	}))
	a := nt.Node(0)
	ctx := context.Background()
	ai := peer.AddrInfo{ID: nt.ID(0), Addrs: a.Host().Addrs()}
	res, err := nt.Node(1).Contacts().Request(ctx, ai, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(2).Contacts().Request(ctx, ai, "hello"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		return strings.HasPrefix(a.Names().Name(nt.ID(1)), "bob~") && strings.HasPrefix(a.Names().Name(nt.ID(2)), "bob~")
	}, "node 0 to name both requesters bob~SUFFIX")

	r, err := a.Contacts().Approve(ctx, res.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := a.Names().Name(nt.ID(1)) // what contact approve's answer shows
	if !r.Delivered {
		t.Fatalf("approval not delivered: %+v", r)
	}
	// The name a moment later, for the record.
	nodetest.WaitFor(t, 10*time.Second, func() bool { return a.Names().Name(nt.ID(1)) == "bob" },
		"the approved contact to read bob at all")
	if got != "bob" {
		t.Errorf("as Approve returned, the approved contact read %q; a moment later %q", got, a.Names().Name(nt.ID(1)))
	}
}
