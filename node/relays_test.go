package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A node behind a NAT with a configured relay sees, in its status and id
// (the local API that parley status and parley id read), that the relay
// refused its reservation, why and when it is asked again; and, once it is
// a contact of the relay's node, that it holds a reservation there, until
// when, and the relayed address to give out, which a peer that cannot
// reach it directly dials. Before, status and id showed neither (autorelay
// announces relayed addresses only through relays with public addresses).
func TestPrivateNodeShowsItsRelayReservation(t *testing.T) {
	const r, a, b = 0, 1, 2
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
		switch i {
		case r:
			c.RelayService = true
		case a:
			c.Reachability = node.ReachabilityPrivate
			c.Relays = c.Bootstrap // node r, as a relay = line names it
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api := localapi.NewClient(node.SocketPath(nt.Home(a)))
	defer api.Close()
	relay := func() localapi.RelayInfo {
		st, err := api.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ri := range st.Relays {
			if ri.PeerID == nt.ID(r).String() {
				return ri
			}
		}
		return localapi.RelayInfo{}
	}
	var ri localapi.RelayInfo
	nt.WaitFor(30*time.Second, func() bool { ri = relay(); return ri.State == "failed" },
		"node %d's status to show its relay's refusal", a)
	if !ri.Configured || !strings.Contains(ri.Error, "permission_denied") || ri.FailedAt.IsZero() ||
		!ri.RetryAt.After(ri.FailedAt) || len(ri.Addrs) != 0 {
		t.Fatalf("refused relay: %+v", ri)
	}

	// Held at once: the node asks its refused relay again when a contact
	// becomes active, not only after autorelay's 30 s back-off.
	nt.Befriend(t, a, r)
	nt.WaitFor(10*time.Second, func() bool { ri = relay(); return ri.State == "held" },
		"node %d's status to show the reservation it holds", a)
	circuit := "/p2p/" + nt.ID(r).String() + "/p2p-circuit/p2p/" + nt.ID(a).String()
	if ri.Error != "" || !ri.Expires.After(time.Now()) || len(ri.Addrs) == 0 || !strings.HasSuffix(ri.Addrs[0], circuit) {
		t.Fatalf("held relay: %+v", ri)
	}
	id, err := api.ID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(id.RelayAddrs) == 0 || id.RelayAddrs[0] != ri.Addrs[0] {
		t.Fatalf("id: relay_addrs %v, want %v", id.RelayAddrs, ri.Addrs)
	}

	// The address given out works for a peer that cannot reach a directly.
	nt.BlockDirect(a, b)
	if err := nt.Node(b).Host().Network().ClosePeer(nt.ID(a)); err != nil {
		t.Fatal(err)
	}
	ai, err := peer.AddrInfoFromP2pAddr(ma.StringCast(id.RelayAddrs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := nt.Node(b).Connect(ctx, *ai); err != nil {
		t.Fatalf("dial %s: %v", id.RelayAddrs[0], err)
	}
	if ci, ok := nt.Node(b).ConnInfo(nt.ID(a)); !ok || !ci.Relayed || ci.Relay != nt.ID(r) {
		t.Fatalf("node %d to %d: %+v %v, want relayed through %d", b, a, ci, ok, r)
	}
}
