package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// circuitVia is node r's addresses as relay addresses.
func circuitVia(nt *nodetest.Net, r int) []ma.Multiaddr {
	var out []ma.Multiaddr
	for _, a := range nt.Node(r).Host().Addrs() {
		out = append(out, a.Encapsulate(ma.StringCast("/p2p/"+nt.ID(r).String()+"/p2p-circuit")))
	}
	return out
}

// Two nodes that meet only through a relay and know no public address of
// their own (peers on loopback observe none) cannot hole punch: peers and
// status say so rather than "hole punching not tried yet" for good.
func TestRelayedWhyWithoutAPublicAddress(t *testing.T) {
	const r, a, b = 0, 1, 2
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nb := nt.Node(b)
	var err error
	if !nodetest.Poll(30*time.Second, func() bool {
		nb.Host().Network().(*swarm.Swarm).Backoff().Clear(nt.ID(a)) // a failed try must dial again
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		err = nb.Connect(dctx, peer.AddrInfo{ID: nt.ID(a), Addrs: circuitVia(nt, r)})
		return err == nil
	}) {
		t.Fatalf("node %d did not reach node %d through the relay: %v", b, a, err)
	}
	for _, x := range [][2]int{{b, a}, {a, b}} {
		ci, ok := nt.Node(x[0]).ConnInfo(nt.ID(x[1]))
		if !ok || !ci.Relayed || !strings.Contains(ci.Why, "hole punching cannot start: this node knows no public address of its own") {
			t.Fatalf("node %d to %d: %+v %v", x[0], x[1], ci, ok)
		}
	}
}
