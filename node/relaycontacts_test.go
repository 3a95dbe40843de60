package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A node's contacts reach it through the relay it reserves on, however
// many they are and whatever else they reach there: to the relay they are
// strangers (not its own contacts, room members or organisation members).
// A share of a destination's circuits for strangers (two, one each,
// counted by the stranger's relay streams) was built against strangers
// taking all sixteen, and taken out again: it locked a node's own contacts
// out, and idle relay streams could hold it.

// reachedRelayed reports whether node i is connected to node j through
// a relay alone; a direct connection (one that slipped past BlockDirect
// while it closed the live ones) is closed and does not count.
func reachedRelayed(nt *nodetest.Net, i, j int) bool {
	conns := nt.Node(i).Host().Network().ConnsToPeer(nt.ID(j))
	for _, c := range conns {
		if _, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT); err != nil {
			_ = nt.Node(i).Host().Network().ClosePeer(nt.ID(j))
			return false
		}
	}
	return len(conns) > 0
}

// A peer that closes its circuit and dials again through the relay at once
// (as punchRound does to have the peer punch again, and as any peer does
// after a dropped relayed connection) gets its circuit, round after round.
func TestStrangerRedialsThroughTheRelayAtOnce(t *testing.T) {
	const r, a = 0, 1
	nt := relayedThrough(t)
	circuit := circuitVia(nt, r)
	s := relayingStranger(t)
	const rounds = 20
	failed := 0
	var last error
	for range rounds {
		s.Network().(*swarm.Swarm).Backoff().Clear(nt.ID(a))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.Connect(ctx, peer.AddrInfo{ID: nt.ID(a), Addrs: circuit})
		cancel()
		if err != nil {
			failed++
			last = err
		}
		_ = s.Network().ClosePeer(nt.ID(a))
	}
	if failed > 0 {
		t.Fatalf("%d of %d dials through the relay right after closing the last circuit were refused (last: %v)", failed, rounds, last)
	}
}

// A partner's node with two contacts in a team, both behind NATs and
// reserved on the team's relay (whose contact the partner is not), reaches
// both through it at once (with the strangers' share, one circuit each
// through the relay, it reached only one at a time).
func TestContactReachesTwoPeersThroughTheirRelay(t *testing.T) {
	const r, a, e, b = 0, 1, 2, 3
	nt := nodetest.Start(t, 4, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
		switch i {
		case r:
			c.RelayService = true
		case a, e:
			c.Reachability = node.ReachabilityPrivate
			c.Relays = c.Bootstrap // node r
		}
	}))
	nt.Befriend(t, a, r)
	nt.Befriend(t, e, r)
	nt.Befriend(t, b, a) // b is a's and e's contact, not the relay's
	nt.Befriend(t, b, e)
	nt.WaitRelayHeld(a, r)
	nt.WaitRelayHeld(e, r)
	nt.BlockDirect(a, b)
	nt.BlockDirect(e, b)
	var last error
	both := func() bool {
		ok := true
		for _, x := range []int{a, e} {
			if !reachedRelayed(nt, b, x) {
				ok = false
				if err := dialRelayed(nt, x, b); err != nil {
					last = err
				}
			}
		}
		return ok
	}
	if !nodetest.Poll(20*time.Second, both) {
		t.Fatalf("node %d (a contact of nodes %d and %d, both reserved on relay %d) never reached both through the relay: %v / %v; last dial: %v",
			b, a, e, r, nt.Node(b).Host().Network().Connectedness(nt.ID(a)), nt.Node(b).Host().Network().Connectedness(nt.ID(e)), last)
	}
}

// Three contacts of a node reserved on a relay, none the relay's own
// contact, all reach it through the relay at once (with the strangers'
// share, two circuits to a destination in all, the third was refused for
// as long as the first two held theirs).
func TestThirdContactReachesAReservedPeer(t *testing.T) {
	const r, a = 0, 1
	nt := nodetest.Start(t, 5, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
		switch i {
		case r:
			c.RelayService = true
		case a:
			c.Reachability = node.ReachabilityPrivate
			c.Relays = c.Bootstrap // node r
		}
	}))
	nt.Befriend(t, a, r)
	contacts := []int{2, 3, 4}
	for _, b := range contacts {
		nt.Befriend(t, b, a) // a's contacts, not the relay's
	}
	nt.WaitRelayHeld(a, r)
	for _, b := range contacts {
		nt.BlockDirect(a, b)
	}
	var last error
	all := func() bool {
		ok := true
		for _, b := range contacts {
			if !reachedRelayed(nt, b, a) {
				ok = false
				if err := dialRelayed(nt, a, b); err != nil {
					last = err
				}
			}
		}
		return ok
	}
	if !nodetest.Poll(20*time.Second, all) {
		var got []network.Connectedness
		for _, b := range contacts {
			got = append(got, nt.Node(b).Host().Network().Connectedness(nt.ID(a)))
		}
		t.Fatalf("node %d's three contacts never all reached it through relay %d: %v; last dial: %v", a, r, got, last)
	}
}
