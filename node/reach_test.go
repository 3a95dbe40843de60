package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Two nodes that cannot reach each other directly meet through a relay
// run by a contact of one of them: the relay serves its contact and
// refuses a stranger's reservation, and the stranger reaches the contact
// through the relay, says so in ConnInfo, and can ask to be a contact.
func TestRelayedContactsThroughAContactsRelay(t *testing.T) {
	const r, a, b = 0, 1, 2
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == r {
			c.RelayService = true
			c.Reachability = node.ReachabilityPublic
		} else {
			c.Reachability = node.ReachabilityPrivate
		}
	}))
	nt.BlockDirect(a, b)
	befriend(t, nt, a, r)
	// Its first try, at start, was refused (not yet a contact) and is in
	// back-off: a restart asks again, of the contact it redials.
	nt.Crash(a)
	nt.RestartAlone(a)
	// Autorelay announces relay addresses only for relays with public
	// addresses; on loopback the circuit address is built by hand.
	var circuit []ma.Multiaddr
	for _, ra := range nt.Node(r).Host().Addrs() {
		circuit = append(circuit, ra.Encapsulate(ma.StringCast("/p2p/"+nt.ID(r).String()+"/p2p-circuit")))
	}
	refused := func() float64 {
		mfs, err := nt.Node(r).Registry().Gather()
		if err != nil {
			return 0
		}
		for _, mf := range mfs {
			if mf.GetName() == "parley_relay_refused_total" {
				for _, m := range mf.GetMetric() {
					if m.GetLabel()[0].GetValue() == "reserve" {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return 0
	}
	nt.WaitFor(30*time.Second, func() bool { return refused() > 0 }, "the relay to refuse the stranger's reservation")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nb := nt.Node(b)
	var err error
	nt.WaitFor(30*time.Second, func() bool {
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		err = nb.Connect(dctx, peer.AddrInfo{ID: nt.ID(a), Addrs: circuit})
		return err == nil
	}, "node %d to reach node %d through the relay (its reservation made): %v", b, a, &err)
	ci, ok := nb.ConnInfo(nt.ID(a))
	if !ok || !ci.Relayed || ci.Relay != nt.ID(r) || !strings.HasPrefix(ci.Why, "relayed") {
		t.Fatalf("conn info %+v %v, want relayed via %s", ci, ok, nt.ID(r))
	}
	if _, err := nb.Contacts().Request(ctx, peer.AddrInfo{ID: nt.ID(a)}, "over the relay"); err != nil {
		t.Fatalf("contact request over the relay: %v", err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		c, ok := nt.Node(a).Contacts().Book().Get(nt.ID(b), time.Now())
		return ok && c.State == consent.StatePendingIn
	}, "the request to arrive over the relayed connection")
	if got := nb.Host().Network().Connectedness(nt.ID(a)); got != network.Limited {
		t.Fatalf("connectedness %v, want limited (relayed only)", got)
	}
}
