package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// The limits of the relay work (relays.go, reach.go): what strangers may
// take of a relay, which relays a node holds reservations on, and how its
// configured relays are listed.

// relayingStranger is a bare libp2p host with a fresh key on loopback
// that can dial through relays (the relay transport is on).
func relayingStranger(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// A node that revokes a contact whose node relays for it stops using that
// relay: the revoked peer is a stranger now, and a node never reserves on
// a stranger's relay (a relay carries, and can drop, delay or count, every
// connection made to the node through the address it hands out). Here the
// relay serves everyone (relay_service = open: it does not drop the node
// when told of the revocation, as a hostile one would not either). Before,
// the node went on holding its reservation there and handing out
// addresses through it: autorelay kept its relay, and askRelays renewed
// it, without asking relayTrusted again. Now, at once after a revocation
// and on each relay tick, the node drops each relay neither configured
// nor trusted: it forgets it, takes autorelay's protection off and closes
// its connections to it (the reservation goes with them).
func TestRevokedContactsRelayIsDropped(t *testing.T) {
	const r, a = 0, 1
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
		switch i {
		case r:
			c.RelayService, c.RelayOpen = true, true
		case a:
			c.Reachability = node.ReachabilityPrivate // no relay line: only its contact's relay
		}
	}))
	nt.Befriend(t, a, r)
	nt.WaitRelayHeld(a, r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api := localapi.NewClient(node.SocketPath(nt.Home(a)))
	defer api.Close()
	if _, err := api.ContactRevoke(ctx, nt.ID(r).String()); err != nil {
		t.Fatal(err)
	}
	through := func() []string {
		var out []string
		for _, addr := range nt.Node(a).RelayAddrs() {
			if strings.Contains(addr.String(), "/p2p/"+nt.ID(r).String()+"/p2p-circuit") {
				out = append(out, addr.String())
			}
		}
		return out
	}
	// Several relay ticks (5 s) and autorelay rounds.
	if !nodetest.Poll(20*time.Second, func() bool { return len(through()) == 0 }) {
		t.Fatalf("node %d revoked node %d, yet 20 s later still holds a reservation on its relay and gives out %v",
			a, r, through())
	}
}

// A relay named twice in the config (say, by its TCP and its QUIC
// address, two relay = lines) is one relay: status lists it once. Before,
// Relays and askRelays went through the config's raw list, so status
// listed the relay once a line and the node asked it once a line; now
// both use one list with each relay once, its addresses merged
// (Node.relayList, as configuredPeers does).
func TestRelayNamedTwiceIsListedOnce(t *testing.T) {
	const r, a = 0, 1
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == a {
			c.Relays = append(append([]peer.AddrInfo(nil), c.Bootstrap...), c.Bootstrap...)
		}
	}))
	n := 0
	for _, st := range nt.Node(a).Relays() {
		if st.Relay == nt.ID(r) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("node %d lists its configured relay %d times, want once: %+v", a, n, nt.Node(a).Relays())
	}
}

// A node whose config names itself as a relay (a team's shared config,
// with its relay = line, used on the relay's own machine too) does not
// list itself among its relays, nor ask itself for a reservation. Before,
// configuredPeers and relayCandidates skipped the node's own ID but
// Relays and askRelays did not: status showed the node as its own relay,
// failed with "dial to self attempted"; now the relay list leaves the
// node out.
func TestOwnIDAsRelayIsNotListed(t *testing.T) {
	t.Parallel() // waits 5 s for what must not happen; sets no package knob
	const r, a = 0, 1
	self := false
	var selfID peer.ID
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		switch i {
		case r:
			c.RelayService = true
			c.Reachability = node.ReachabilityPrivate
			if self {
				c.Relays = []peer.AddrInfo{{ID: selfID}}
			}
		}
	}))
	selfID, self = nt.ID(r), true
	nt.Crash(r)
	nt.Restart(r)
	// A contact made: the node asks its configured relays at once.
	nt.Befriend(t, a, r)
	var got []node.RelayState
	if nodetest.Poll(5*time.Second, func() bool {
		got = nt.Node(r).Relays()
		for _, st := range got {
			if st.Relay == selfID && st.Err != "" {
				return true
			}
		}
		return false
	}) || len(got) != 0 {
		t.Fatalf("node %d lists itself as a relay: %+v", r, got)
	}
}

// A node behind a NAT holds reservations on at most as many relays as
// autorelay keeps (numRelays, 2): each reservation takes a slot of a
// relay's 128 (8 an IP: an office behind one NAT), and the relayed
// addresses given out grow with each. Before, when a contact became
// active, askRelays reserved on every connected contact or room member
// that offered relaying and was not held, whatever the node held already;
// those autorelay did not pick were renewed by nobody (askRelays renewed
// only autorelay's) and lapsed after the relay's term (an hour) while the
// addresses through them were given out. Now the node reserves on a
// trusted relay itself only while it holds (or is asking) fewer than
// numRelays, renews the reservations it made itself before they end, and
// when autorelay picks another relay after it, lets its own lapse, given
// out no more.
func TestReservationsStayWithinAutorelaysTwo(t *testing.T) {
	t.Parallel() // waits 4 s for what must not happen; sets no package knob
	const a = 3
	const every = time.Second // autorelay's rounds, and the relay tick (5 s by default)
	nt := nodetest.Start(t, 4, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
		c.RelayInterval = every
		c.RelayService = i != a
		if i == a {
			c.Reachability = node.ReachabilityPrivate
		}
	}))
	held := func() int {
		k := 0
		for _, st := range nt.Node(a).Relays() {
			if st.Held {
				k++
			}
		}
		return k
	}
	// Each relay connected, and known to offer relaying, before it
	// becomes a contact: dialled at once (waiting for the DHT to bring
	// them together took up to 15 s).
	for r := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := nt.Node(a).Connect(ctx, peer.AddrInfo{ID: nt.ID(r), Addrs: nt.Node(r).Host().Addrs()})
		cancel()
		if err != nil {
			t.Fatalf("node %d dials node %d: %v", a, r, err)
		}
		nt.WaitFor(15*time.Second, func() bool {
			ok, err := nt.Node(a).Host().Peerstore().SupportsProtocols(nt.ID(r), hop)
			return err == nil && len(ok) > 0
		}, "node %d to learn that node %d offers relaying", a, r)
		nt.Befriend(t, a, r)
	}
	// Four autorelay rounds and relay ticks.
	if nodetest.Poll(4*every, func() bool { return held() > 2 }) {
		t.Fatalf("node %d holds %d reservations (autorelay keeps 2); relayed addresses given out: %d",
			a, held(), len(nt.Node(a).RelayAddrs()))
	}
}
