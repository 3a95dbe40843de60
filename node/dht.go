package node

import (
	"context"
	"slices"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p-kad-dht/records"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/discovery"
)

// dhtOptions bounds what strangers can store in this node's DHT server.
// Values (agent cards, public keys) are kept in a bounded store
// (discovery.ValueStore: so many cards per node, so many records in all,
// each at most discovery.MaxValueRecordWire; a full store makes room for a
// newcomer as the provider store does).
// Provider records are kept in a bounded store (discovery.ProviderStore):
// only keys of Parley's form, at most so many per peer, from so many
// peers, in all; when full it makes room for a newcomer's record by taking
// one of the peer that holds the most (or, for a new peer when every peer
// place is taken, the peer that holds the fewest), so that whoever came
// first cannot keep everyone else out; an announcement out of bounds (a
// peer at its bound, or one that holds its share of a full store) is
// refused before the DHT handles it, and at most
// discovery.MaxProviderAddrs of its addresses are kept. Records live as long as an agent card may (discovery.MaxCardTTL
// plus the clock skew allowed), since nodes announce their cards again
// well within that.
func (n *Node) dhtOptions() []dht.Option {
	ps := discovery.NewProviderStore(discovery.ProviderStoreConfig{Self: n.id})
	vs := discovery.NewValueStore(discovery.ValueStoreConfig{Self: n.id})
	n.registerDHTMetrics(ps, vs)
	return []dht.Option{
		dht.ValueDatastore(vs),
		dht.ProviderDatastore(ps),
		dht.ProviderManagerOpts(records.ProvideValidity(discovery.MaxCardTTL + discovery.MaxClockSkew)),
		// A DHT answer names peers with their addresses, which the node
		// puts in its peerstore and dials: any DHT server could name
		// hundreds for one peer (TestDHTAnswerSteersFewDials).
		dht.AddressFilter(capDHTAddrs),
		dht.OnRequestHook(func(_ context.Context, s network.Stream, req *dhtpb.Message) {
			if req.GetType() != dhtpb.Message_ADD_PROVIDER {
				return
			}
			if !ps.Admit(s.Conn().RemotePeer(), req.GetKey()) {
				// With no provider in it, the DHT refuses the message
				// ("no valid provider") and stores nothing.
				req.ProviderPeers = nil
				return
			}
			for i := range req.ProviderPeers {
				if a := req.ProviderPeers[i].Addrs; len(a) > discovery.MaxProviderAddrs {
					req.ProviderPeers[i].Addrs = a[:discovery.MaxProviderAddrs]
				}
			}
		}),
	}
}

// maxDHTAddrs bounds the addresses a DHT answer gives one peer that the
// node keeps (and dials), and those of its own it hands out.
const maxDHTAddrs = 16

// capDHTAddrs keeps at most maxDHTAddrs of addrs, relayed and public
// ones first (a node behind a NAT lists its relayed addresses last).
func capDHTAddrs(addrs []ma.Multiaddr) []ma.Multiaddr {
	if len(addrs) <= maxDHTAddrs {
		return addrs
	}
	out := slices.Clone(addrs)
	rank := func(a ma.Multiaddr) int {
		if isRelayed(a) || manet.IsPublicAddr(a) {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(out, func(x, y ma.Multiaddr) int { return rank(x) - rank(y) })
	return out[:maxDHTAddrs]
}

func (n *Node) registerDHTMetrics(ps *discovery.ProviderStore, vs *discovery.ValueStore) {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_dht_provider_records", Help: "Provider records this node keeps for others.",
		}, func() float64 { r, _, _ := ps.Stats(); return float64(r) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "parley_dht_provider_refused_total",
			Help: "Provider announcements refused: not Parley's key form, over the per-peer bound, or over a fair share of a full store.",
		}, func() float64 { _, _, d := ps.Stats(); return float64(d) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "parley_dht_provider_evicted_total",
			Help: "Provider records that gave way to another peer's in a full store.",
		}, func() float64 { return float64(ps.Evicted()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_dht_value_records", Help: "DHT value records (agent cards, public keys) this node keeps.",
		}, func() float64 { r, _ := vs.Stats(); return float64(r) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "parley_dht_value_refused_total", Help: "DHT value records refused: over the per-node or total bound.",
		}, func() float64 { _, d := vs.Stats(); return float64(d) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "parley_dht_value_evicted_total",
			Help: "DHT value records that gave way to another node's in a full store.",
		}, func() float64 { return float64(vs.Evicted()) }),
	}
	for _, c := range cs {
		register(n.reg, c)
	}
}

// findPeer looks p up in the DHT. The lookup dials the peers it finds,
// p among them; when that gives a connection, direct or through a relay,
// the wait ends at once: a lookup that reached p only through a relay
// would otherwise wait for a direct connection until its deadline.
func (n *Node) findPeer(ctx context.Context, p peer.ID) (peer.AddrInfo, error) {
	sub, err := n.host.EventBus().Subscribe(new(event.EvtPeerConnectednessChanged))
	if err != nil {
		return n.dht.FindPeer(ctx, p)
	}
	defer sub.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type found struct {
		ai  peer.AddrInfo
		err error
	}
	ch := make(chan found, 1)
	go func() {
		ai, err := n.dht.FindPeer(ctx, p)
		ch <- found{ai, err}
	}()
	for {
		select {
		case f := <-ch:
			return f.ai, f.err
		case e, ok := <-sub.Out():
			if !ok {
				f := <-ch
				return f.ai, f.err
			}
			ev := e.(event.EvtPeerConnectednessChanged)
			if ev.Peer == p && (ev.Connectedness == network.Connected || ev.Connectedness == network.Limited) {
				return n.host.Peerstore().PeerInfo(p), nil
			}
		}
	}
}
