package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

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
