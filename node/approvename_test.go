package node_test

import (
	"context"
	"errors"
	"net/http"
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

// TestContactsAreTakenByTheNameTheyShow: `parley contact approve`, `deny`
// and `revoke` take a contact or requester by the name `parley contact
// list` shows (its handle, or handle~SUFFIX where handles read alike) as
// well as by request ID or peer ID. A name that reads like two nodes'
// decides nothing and names both; a name no node has is refused.
func TestContactsAreTakenByTheNameTheyShow(t *testing.T) {
	nt := nodetest.Start(t, 4, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Handle = []string{"alice", "bob", "bob", "carol"}[i]
	}))
	a := nt.Node(0)
	ctx := context.Background()
	ai := peer.AddrInfo{ID: nt.ID(0), Addrs: a.Host().Addrs()}
	for i := 1; i <= 3; i++ {
		if _, err := nt.Node(i).Contacts().Request(ctx, ai, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	api := localapi.NewClient(node.SocketPath(nt.Home(0)))
	for i := 1; i <= 3; i++ {
		pendingID(t, nt, api, nt.ID(i).String())
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		return strings.HasPrefix(a.Names().Name(nt.ID(1)), "bob~") && a.Names().Name(nt.ID(3)) == "carol"
	}, "node 0 to name the requesters")
	state := func(i int) string {
		es, err := api.Contacts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.PeerID == nt.ID(i).String() {
				return e.State
			}
		}
		return "none"
	}

	_, err := api.ContactApprove(ctx, "bob", "")
	if err == nil || !strings.Contains(err.Error(), nt.ID(1).String()) || !strings.Contains(err.Error(), nt.ID(2).String()) {
		t.Errorf("approve bob with two requesters named bob: %v; want a refusal naming both", err)
	}
	if s1, s2 := state(1), state(2); s1 != "pending-in" || s2 != "pending-in" {
		t.Errorf("after the refused approval the requests are %s and %s, want both pending-in", s1, s2)
	}

	shown := a.Names().Name(nt.ID(1))
	r, err := api.ContactApprove(ctx, shown, "")
	if err != nil {
		t.Fatalf("approve %s (as contact list shows it): %v", shown, err)
	}
	if r.PeerID != nt.ID(1).String() || !r.Delivered {
		t.Errorf("approve %s: %+v, want node 1's request approved and delivered", shown, r)
	}
	if s := state(2); s != "pending-in" {
		t.Errorf("the other bob's request is %s after approving %s, want pending-in", s, shown)
	}

	if _, err := api.ContactDeny(ctx, "carol"); err != nil {
		t.Fatalf("deny carol: %v", err)
	}
	if s := state(3); s == "pending-in" {
		t.Errorf("carol's request is still pending after deny carol")
	}

	nodetest.WaitFor(t, 20*time.Second, func() bool { return a.Names().Name(nt.ID(1)) == "bob" }, "the approved bob to read bob")
	if _, err := api.ContactRevoke(ctx, "bob"); err != nil {
		t.Fatalf("revoke bob (the contact): %v", err)
	}
	if s := state(1); s == "active" {
		t.Errorf("node 1 is still an active contact after revoke bob")
	}

	_, err = api.ContactApprove(ctx, "nobody", "")
	var ae *localapi.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || !strings.Contains(err.Error(), "parley contact list") {
		t.Errorf("approve nobody: %v; want a 404 that points to parley contact list", err)
	}
}
