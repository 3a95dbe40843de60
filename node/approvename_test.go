package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestApprovedRequesterReadsBareAsApproveReturns: two strangers named bob
// ask node 0; both read bob~SUFFIX. Once node 0's user approves node 1,
// node 1 is a contact and outranks the other: it reads "bob". The name the
// approval's answer shows (`parley contact approve`'s confirmation, the
// local API's answer) must be that one. Before, it read bob~SUFFIX: the
// contact service only wakes the name service's loop, and the answer was
// made before the loop had asked the lists again (found by a review).
func TestApprovedRequesterReadsBareAsApproveReturns(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Handle = []string{"alice", "bob", "bob"}[i]
	}))
	a := nt.Node(0)
	ctx := context.Background()
	ai := peer.AddrInfo{ID: nt.ID(0), Addrs: a.Host().Addrs()}
	if _, err := nt.Node(1).Contacts().Request(ctx, ai, "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(2).Contacts().Request(ctx, ai, "hello"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		return strings.HasPrefix(a.Names().Name(nt.ID(1)), "bob~") && strings.HasPrefix(a.Names().Name(nt.ID(2)), "bob~")
	}, "node 0 to name both requesters bob~SUFFIX")

	api := localapi.NewClient(node.SocketPath(nt.Home(0)))
	r, err := api.ContactApprove(ctx, pendingID(t, nt, api, nt.ID(1).String()), "")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Delivered {
		t.Fatalf("approval not delivered: %+v", r)
	}
	if r.Name != "bob" {
		t.Errorf("the approval's answer names the approved contact %q; a moment later it reads %q", r.Name, a.Names().Name(nt.ID(1)))
	}
	if got := a.Names().Name(nt.ID(2)); !strings.HasPrefix(got, "bob~") {
		t.Errorf("the other requester reads %q, want bob~SUFFIX", got)
	}
}
