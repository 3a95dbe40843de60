package node_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

const hop = protocol.ID("/libp2p/circuit/relay/0.2.0/hop")

// relayState is node i's view of its reservation on relay r, as its
// status shows it (the zero value: not listed).
func relayState(t *testing.T, nt *nodetest.Net, i, r int) localapi.RelayInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	api := localapi.NewClient(node.SocketPath(nt.Home(i)))
	defer api.Close()
	st, err := api.Status(ctx)
	if err != nil {
		t.Fatalf("status of node %d: %v", i, err)
	}
	for _, ri := range st.Relays {
		if ri.PeerID == nt.ID(r).String() {
			return ri
		}
	}
	return localapi.RelayInfo{}
}

// relayGauge is node i's parley_relay_reservations.
func relayGauge(nt *nodetest.Net, i int) float64 {
	mfs, err := nt.Node(i).Registry().Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() == "parley_relay_reservations" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// A node told to relay (relay_service = on) relays even though AutoNAT
// never finds it public: a team's first relay, on a public address with
// only NATed laptops around, has no public peer to tell it so. Its status
// says the service serves. Before, libp2p's relay service waited for
// AutoNAT to say "public", which it never did: the relay refused every
// reservation (the hop protocol was not even spoken) while its status said
// "relay service: on".
func TestRelayServiceRunsWhileReachabilityIsUnknown(t *testing.T) {
	const r, a = 0, 1
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		switch i {
		case r:
			c.RelayService = true // reachability: auto (AutoNAT finds nothing on loopback)
		case a:
			c.Reachability = node.ReachabilityPrivate
			c.Relays = c.Bootstrap
		}
	}))
	nt.Befriend(t, a, r)
	nt.WaitFor(20*time.Second, func() bool { return relayState(t, nt, a, r).State == "held" },
		"node %d to hold a reservation on node %d's relay", a, r)
	if got := nt.Node(r).Host().Network().Connectedness(nt.ID(a)); got != network.Connected {
		t.Fatalf("relay to node %d: %v", a, got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	api := localapi.NewClient(node.SocketPath(nt.Home(r)))
	defer api.Close()
	st, err := api.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reachability != "unknown" || st.RelayService != "on (contacts and room members): serving" {
		t.Fatalf("relay's status: reachability %q, relay service %q", st.Reachability, st.RelayService)
	}
}

// A connected stranger that offers relaying (relay_service = open) is
// never one of the node's relays: only configured relays, contacts and
// room members are. Before, autorelay was offered every connected peer
// that spoke the relay protocol, strangers after contacts, and took a
// stranger's relay as its second.
func TestStrangersRelayIsNotUsed(t *testing.T) {
	t.Parallel() // waits 4 s for what must not happen; sets no package knob
	const c, a, s = 0, 1, 2
	const every = time.Second // autorelay's rounds, and the relay tick (5 s by default)
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, cfg *node.Config) {
		cfg.Reachability = node.ReachabilityPublic
		cfg.RelayInterval = every
		switch i {
		case c:
			cfg.RelayService = true
		case a:
			cfg.Reachability = node.ReachabilityPrivate
			cfg.Relays = cfg.Bootstrap // node c: reserved at once when the contact is made
		case s:
			cfg.RelayService, cfg.RelayOpen = true, true
		}
	}))
	nt.Befriend(t, a, c)
	nt.WaitFor(30*time.Second, func() bool { return relayCount(nt, c, "reserve", "ok") >= 1 },
		"node %d to reserve on its contact's relay", a)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	na := nt.Node(a)
	if err := nt.Node(s).Connect(ctx, peer.AddrInfo{ID: na.ID(), Addrs: na.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool {
		ok, err := na.Host().Peerstore().SupportsProtocols(nt.ID(s), hop)
		return err == nil && len(ok) > 0
	}, "node %d to learn that the stranger offers relaying", a)
	// autorelay wants two relays and holds one: it asks for candidates
	// again every RelayInterval. Four rounds.
	if nodetest.Poll(4*every, func() bool { return relayCount(nt, s, "reserve", "ok") > 0 }) {
		t.Fatalf("node %d reserved a slot on a stranger's relay", a)
	}
	for _, st := range na.Relays() {
		if st.Relay == nt.ID(s) {
			t.Fatalf("node %d lists the stranger as a relay: %+v", a, st)
		}
	}
}

// A reservation is held only while the relay holds it. The relay restarts
// without its relay service: the node's status first says the connection
// closed, then, once connected again, that the relay refused (it does not
// offer relaying), and it gives out no relayed address. The relay restarts
// with its service: the node reserves again at once, and a peer reaches
// it through the address it gives out. Before, a reconnection revived the
// old reservation's end ("held until …", an hour), so the node handed out
// relayed addresses that failed (NO_RESERVATION), and while the relay was
// down its status said "waiting: not asked yet".
func TestRelayReservationFollowsTheRelay(t *testing.T) {
	const r, a, b = 0, 1, 2
	var serve atomic.Bool
	serve.Store(true)
	var relays []peer.AddrInfo
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
		switch i {
		case r:
			c.RelayService = serve.Load()
		case a:
			c.Reachability = node.ReachabilityPrivate
			if relays == nil {
				relays = c.Bootstrap // node r, as a relay = line names it
			}
			c.Relays = relays
		}
	}))
	nt.Befriend(t, a, r)
	var ri localapi.RelayInfo
	nt.WaitFor(20*time.Second, func() bool { ri = relayState(t, nt, a, r); return ri.State == "held" },
		"node %d to hold a reservation on node %d", a, r)

	serve.Store(false)
	nt.Crash(r)
	// The connection closed, then (asked again) the relay cannot be
	// reached.
	nt.WaitFor(10*time.Second, func() bool {
		ri = relayState(t, nt, a, r)
		return ri.State == "failed" && (strings.Contains(ri.Error, "closed") || strings.Contains(ri.Error, "could not reach"))
	}, "node %d's status to say its relay's connection closed (last: %+v)", a, &ri)
	nt.Restart(r)
	nt.WaitFor(20*time.Second, func() bool {
		return nt.Node(a).Host().Network().Connectedness(nt.ID(r)) == network.Connected
	}, "node %d to be connected to the restarted relay", a)
	nt.WaitFor(20*time.Second, func() bool {
		ri = relayState(t, nt, a, r)
		return ri.State == "failed" && strings.Contains(ri.Error, "does not offer relaying")
	}, "node %d's status to say the restarted relay does not relay (last: %+v)", a, &ri)
	if got := nt.Node(a).RelayAddrs(); len(got) != 0 {
		t.Fatalf("node %d gives out relayed addresses through a relay that holds no reservation: %v", a, got)
	}

	serve.Store(true)
	nt.Crash(r)
	nt.Restart(r)
	// The gauge is the restarted relay's own: a reservation it gave.
	nt.WaitFor(20*time.Second, func() bool { ri = relayState(t, nt, a, r); return ri.State == "held" && relayGauge(nt, r) == 1 },
		"node %d to reserve again on the relay started again (last: %+v)", a, &ri)
	// Every relayed address given out works (the relay dialled node a
	// again after its restart: the port that connection came from is
	// not one).
	nt.BlockDirect(a, b)
	for _, addr := range ri.Addrs {
		ai, err := peer.AddrInfoFromP2pAddr(ma.StringCast(addr))
		if err != nil {
			t.Fatal(err)
		}
		nb := nt.Node(b)
		_ = nb.Host().Network().ClosePeer(nt.ID(a))
		nb.Host().Peerstore().ClearAddrs(nt.ID(a))
		nb.Host().Network().(*swarm.Swarm).Backoff().Clear(nt.ID(a))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = nb.Connect(ctx, *ai)
		cancel()
		if err != nil {
			t.Fatalf("dial %s (given out among %v): %v", addr, ri.Addrs, err)
		}
	}
}

// A node whose config names only a relay (no bootstrap line) dials it at
// start, and a contact request to the relay's peer ID alone uses the
// configured address, also when the relay was down at the node's start.
// Before, nothing dialled a configured relay until AutoNAT found the node
// behind a NAT, which it could not without a peer, and a request by peer
// ID went to the DHT, which had no peer to ask.
func TestConfiguredRelayIsDialled(t *testing.T) {
	const r, a = 0, 1
	var relays []peer.AddrInfo
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == a {
			if relays == nil {
				relays = c.Bootstrap
			}
			c.Relays, c.Bootstrap = relays, nil
		}
	}))
	nt.WaitFor(10*time.Second, func() bool {
		return nt.Node(a).Host().Network().Connectedness(nt.ID(r)) == network.Connected
	}, "node %d to dial its configured relay", a)

	nt.Crash(a)
	nt.Crash(r)
	nt.RestartAlone(a) // its dial of the relay fails
	nt.RestartAlone(r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := nt.Node(a).Contacts().Request(ctx, peer.AddrInfo{ID: nt.ID(r)}, "by peer ID"); err != nil {
		t.Fatalf("contact request to the configured relay's peer ID: %v", err)
	}
}

// relayedThrough sets up a relay r (a contact's relay), a node a behind a
// NAT that holds a reservation on it, and a node b, a contact of r too,
// that reaches a only through r.
func relayedThrough(t *testing.T) *nodetest.Net {
	const r, a, b = 0, 1, 2
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
		switch i {
		case r:
			c.RelayService = true
		case a:
			c.Reachability = node.ReachabilityPrivate
			c.Relays = c.Bootstrap
		}
	}))
	nt.Befriend(t, a, r)
	nt.Befriend(t, b, r)
	nt.WaitFor(20*time.Second, func() bool { return relayState(t, nt, a, r).State == "held" },
		"node %d to hold a reservation on node %d", a, r)
	nt.BlockDirect(a, b)
	return nt
}

// dialRelayed has node b dial node a through the relayed address a gives
// out.
func dialRelayed(nt *nodetest.Net, a, b int) error {
	addrs := nt.Node(a).RelayAddrs()
	if len(addrs) == 0 {
		return errNoRelayAddr
	}
	ai, err := peer.AddrInfoFromP2pAddr(addrs[0])
	if err != nil {
		return err
	}
	nt.Node(b).Host().Network().(*swarm.Swarm).Backoff().Clear(ai.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return nt.Node(b).Connect(ctx, *ai)
}

type relayErr string

func (e relayErr) Error() string { return string(e) }

const errNoRelayAddr = relayErr("no relayed address")

// A relay that revokes a contact stops relaying for it at once: its
// reservation ends, and a peer the relay serves can no longer reach it
// through the relay. Before, the relay kept the reservation for its whole
// term (an hour) and went on relaying connections to the revoked peer.
func TestRevokedContactLosesItsRelayReservation(t *testing.T) {
	const r, a, b = 0, 1, 2
	nt := relayedThrough(t)
	nt.WaitFor(10*time.Second, func() bool { return relayGauge(nt, r) == 1 }, "the relay to count the reservation")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api := localapi.NewClient(node.SocketPath(nt.Home(r)))
	defer api.Close()
	if _, err := api.ContactRevoke(ctx, nt.ID(a).String()); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool { return relayGauge(nt, r) == 0 },
		"the relay to drop the revoked contact's reservation")
	_ = nt.Node(b).Host().Network().ClosePeer(nt.ID(a))
	if err := dialRelayed(nt, a, b); err == nil {
		t.Fatalf("node %d reached the revoked node %d through the relay", b, a)
	}
}

// `parley connect` says how the peer is connected: to a peer reached only
// through a relay, "relayed" and the relay, both when it dials and when
// the peer is connected already. Before, a peer connected already was
// always "direct", and a fresh dial said nothing.
func TestConnectSaysRelayed(t *testing.T) {
	const r, a, b = 0, 1, 2
	nt := relayedThrough(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api := localapi.NewClient(node.SocketPath(nt.Home(b)))
	defer api.Close()
	relayed := nt.Node(a).RelayAddrs()[0].String()
	var pe localapi.Peer
	var err error
	if !nodetest.Poll(20*time.Second, func() bool {
		// A direct connection that was being made when BlockDirect
		// came may have been kept: each try starts unconnected.
		_ = nt.Node(b).Host().Network().ClosePeer(nt.ID(a))
		nt.Node(b).Host().Network().(*swarm.Swarm).Backoff().Clear(nt.ID(a))
		pe, err = api.Connect(ctx, relayed)
		return err == nil && pe.Why == ""
	}) {
		t.Fatalf("connect %s: %v", relayed, err)
	}
	if pe.Conn != "relayed" || pe.Relay != nt.ID(r).String() {
		t.Fatalf("connect through the relay: %+v", pe)
	}
	direct := nt.Node(a).Addrs()[0].String()
	pe, err = api.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	if pe.Conn != "relayed" || pe.Relay != nt.ID(r).String() || !strings.Contains(pe.Why, "already connected") ||
		!slices.ContainsFunc(pe.Addrs, func(s string) bool { return strings.Contains(s, "/p2p-circuit") }) {
		t.Fatalf("connect to a peer connected through a relay: %+v", pe)
	}
}

// Each relayed address a node gives out can be dialled, by a peer that
// knows nothing else of the relay, also when the relay dialled the node: over TCP that connection comes from a port the
// relay opened for it alone, and an address built on it led nowhere.
func TestRelayedAddrsAreDialable(t *testing.T) {
	const r, a = 0, 1
	nt := relayedThrough(t)
	nr, na := nt.Node(r), nt.Node(a)
	_ = nr.Host().Network().ClosePeer(na.ID())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nr.Host().Network().(*swarm.Swarm).Backoff().Clear(na.ID())
	if err := nr.Connect(ctx, peer.AddrInfo{ID: na.ID(), Addrs: na.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	inbound := false
	for _, c := range na.Host().Network().ConnsToPeer(nr.ID()) {
		inbound = inbound || c.Stat().Direction == network.DirInbound
	}
	if !inbound {
		t.Fatal("node a has no connection the relay dialled")
	}
	var ri localapi.RelayInfo
	nt.WaitFor(20*time.Second, func() bool { ri = relayState(t, nt, a, r); return ri.State == "held" },
		"node %d to hold its reservation again (last: %+v)", a, &ri)
	// Each address is dialled by a peer that knows nothing of the relay
	// but what the address says (a peer connected to the relay already
	// would go through that connection, whatever the address).
	for _, addr := range na.RelayAddrs() {
		ai, err := peer.AddrInfoFromP2pAddr(addr)
		if err != nil {
			t.Fatal(err)
		}
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			t.Fatal(err)
		}
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		err = h.Connect(dctx, *ai)
		dcancel()
		h.Close()
		if err != nil {
			t.Fatalf("dial %s (given out among %v): %v", addr, na.RelayAddrs(), err)
		}
	}
}
