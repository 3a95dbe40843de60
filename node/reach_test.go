package node_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
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
		if i == b {
			// A stranger to the relay's node: it uses the relay only
			// because its config names it (a stranger's relay is never
			// taken otherwise).
			c.Relays = c.Bootstrap
		}
	}))
	nt.BlockDirect(a, b)
	nt.Befriend(t, a, r)
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
	// The stranger dials only once the contact holds its reservation: a
	// dial before it fails (NO_RESERVATION) and puts the circuit address
	// in the swarm's dial backoff (5 s, then 6, 9, 14 s...), so a poll
	// that dialled at once had its later tries refused without a dial
	// and, with a reservation a little late, timed out.
	nt.WaitFor(30*time.Second, func() bool { return relayCount(nt, r, "reserve", "ok") >= 1 },
		"node %d to reserve a slot on its contact's relay", a)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nb := nt.Node(b)
	var err error
	if !nodetest.Poll(30*time.Second, func() bool {
		// A failed try leaves the address in dial backoff: the next
		// try must dial again.
		nb.Host().Network().(*swarm.Swarm).Backoff().Clear(nt.ID(a))
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		err = nb.Connect(dctx, peer.AddrInfo{ID: nt.ID(a), Addrs: circuit})
		return err == nil
	}) {
		t.Fatalf("node %d did not reach node %d through the relay (its reservation made): %v", b, a, err)
	}
	ci, ok := nb.ConnInfo(nt.ID(a))
	if !ok || !ci.Relayed || ci.Relay != nt.ID(r) || !strings.HasPrefix(ci.Why, "relayed") {
		t.Fatalf("conn info %+v %v, want relayed via %s", ci, ok, nt.ID(r))
	}
	req, err := nb.Contacts().Request(ctx, peer.AddrInfo{ID: nt.ID(a)}, "over the relay")
	if err != nil {
		t.Fatalf("contact request over the relay: %v", err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		c, ok := nt.Node(a).Contacts().Book().Get(nt.ID(b), time.Now())
		return ok && c.State == consent.StatePendingIn
	}, "the request to arrive over the relayed connection")
	if got := nb.Host().Network().Connectedness(nt.ID(a)); got != network.Limited {
		t.Fatalf("connectedness %v, want limited (relayed only)", got)
	}

	// A room over the relay: GossipSub does not run there, yet each event
	// reaches the other node at once (a nudge, then a sync), well before
	// anti-entropy's next round (30 s).
	if _, err := nt.Node(a).Contacts().Approve(ctx, req.ID, 0); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		c, ok := nb.Contacts().Book().Get(nt.ID(a), time.Now())
		return ok && c.State == consent.StateActive
	}, "the approval to come back over the relay")
	id, err := nb.Rooms().Create(ctx, "across", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nb.Rooms().Invite(ctx, id, nt.ID(a), "alice"); err != nil {
		t.Fatal(err)
	}
	holds := func(i int, n uint64) bool {
		in, err := nt.Node(i).Rooms().Get(id)
		return err == nil && in.Events >= n
	}
	nt.WaitFor(10*time.Second, func() bool { return holds(a, 2) }, "node %d to join over the relay", a)
	for k, from := range []int{b, a, b, a} {
		in, err := nt.Node(from).Rooms().Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nt.Node(from).Rooms().Say(ctx, id, rooms.SayArgs{Agent: "bot", Text: fmt.Sprintf("over the relay %d", k)}); err != nil {
			t.Fatal(err)
		}
		to := a + b - from
		nt.WaitFor(10*time.Second, func() bool { return holds(to, in.Events+1) }, "message %d to reach node %d over the relay", k, to)
	}
}

// A node behind a NAT reserves a slot on its contact's relay as soon as
// it has started and the contact is connected again, not at autorelay's
// next ask for candidates (5 s later): until it holds one, nobody can
// reach it. Before, the node answered autorelay's first ask, made while it
// was starting, with no candidate.
func TestPrivateNodeReservesOnItsContactsRelayAtStart(t *testing.T) {
	const r, a = 0, 1
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RelayService = i == r
		c.Reachability = node.ReachabilityPublic
		if i == a {
			c.Reachability = node.ReachabilityPrivate
		}
	}))
	nt.Befriend(t, a, r)
	nt.Crash(a)
	before := relayCount(nt, r, "reserve", "ok")
	start := time.Now()
	nt.RestartAlone(a)
	// autorelay asks for candidates again only after 5 s.
	nt.WaitFor(4*time.Second, func() bool { return relayCount(nt, r, "reserve", "ok") > before },
		"node %d to reserve on its contact's relay after a restart", a)
	t.Logf("reserved %v after the restart", time.Since(start).Round(time.Millisecond))
}

// relayCount is the relay service's count of requests of kind answered
// with status, on node i.
func relayCount(nt *nodetest.Net, i int, kind, status string) float64 {
	mfs, err := nt.Node(i).Registry().Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() != "parley_relay_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["kind"] == kind && l["status"] == status {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// stranger is a bare libp2p host with a fresh key on loopback.
func stranger(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// A relay flooded with reservations: strangers with fresh keys are refused
// by a relay for contacts, and an open relay takes as many from one address
// as its cap and refuses the rest; every answer is counted, and once the
// flood is gone the relay still serves its contact.
func TestRelaySurvivesAReservationFlood(t *testing.T) {
	const closed, open, a = 0, 1, 2
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		switch i {
		case closed, open:
			c.RelayService = true
			c.RelayOpen = i == open
		}
		// Every node public: a private one's own autorelay would reserve
		// on both relays as soon as it starts (before it is a contact,
		// refused), and its answers would mix with the flood's counts.
		c.Reachability = node.ReachabilityPublic
	}))
	nt.Befriend(t, a, closed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info := func(i int) peer.AddrInfo { return peer.AddrInfo{ID: nt.ID(i), Addrs: nt.Node(i).Host().Addrs()} }
	reserve := func(h host.Host, relay int) error {
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		defer rcancel()
		if err := h.Connect(rctx, info(relay)); err != nil {
			return err
		}
		_, err := client.Reserve(rctx, h, info(relay))
		return err
	}

	for _, r := range []int{closed, open} {
		nt.WaitFor(30*time.Second, func() bool {
			return slices.Contains(nt.Node(r).Host().Mux().Protocols(), protocol.ID("/libp2p/circuit/relay/0.2.0/hop"))
		}, "node %d's relay service to start", r)
	}
	const flood = 20
	var hs []host.Host
	for range flood {
		h := stranger(t)
		hs = append(hs, h)
		if err := reserve(h, closed); err == nil {
			t.Fatal("the contacts' relay took a stranger's reservation")
		}
	}
	// (The relay counts an answer just after it sends it.)
	nt.WaitFor(10*time.Second, func() bool { return relayCount(nt, closed, "reserve", "permission_denied") == flood },
		"the %d refused reservations to be counted", flood)
	took := 0
	for _, h := range hs {
		if err := reserve(h, open); err == nil {
			took++
		}
	}
	// All strangers come from 127.0.0.1: the cap per address holds.
	if took != 8 {
		t.Fatalf("the open relay took %d of %d reservations from one address, want its cap of 8", took, flood)
	}
	nt.WaitFor(10*time.Second, func() bool {
		return relayCount(nt, open, "reserve", "ok") == float64(took) && relayCount(nt, open, "reserve", "reservation_refused") == float64(flood-took)
	}, "the open relay's answers to be counted")

	// The flood leaves; the contact reserves on its contact's relay and the
	// relay's rooms still work.
	for _, h := range hs {
		h.Close()
	}
	var err error
	if !nodetest.Poll(30*time.Second, func() bool {
		err = reserve(nt.Node(a).Host(), closed)
		return err == nil
	}) {
		t.Fatalf("the contact did not reserve on the relay after the flood: %v", err)
	}
	nt.WaitFor(10*time.Second, func() bool { return relayCount(nt, closed, "reserve", "ok") == 1 }, "the contact's reservation to be counted")
}
