package node

import (
	"crypto/sha256"
	"errors"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/parley-mesh/parley/internal/store"
)

// messageID names a GossipSub message by the hash of its bytes, the same
// hash that names a room event, so duplicates are dropped by content.
func messageID(m *pb.Message) string {
	h := sha256.Sum256(m.Data)
	return string(h[:])
}

// registerMetrics adds the node's collectors to its registry, the
// database's timings among them.
func (n *Node) registerMetrics() {
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_peers_connected", Help: "Peers with an open connection.",
		}, func() float64 { return float64(len(n.host.Network().Peers())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_dht_routing_table_peers", Help: "Peers in the Kad-DHT routing table.",
		}, func() float64 { return float64(n.dht.RoutingTable().Size()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_uptime_seconds", Help: "Seconds since the node started.",
		}, func() float64 { return time.Since(n.started).Seconds() }),
	}
	cs = append(cs, n.db.Collectors()...)
	for _, c := range cs {
		register(n.reg, c)
	}
}

// register adds c to reg. A collector of the same metrics already there
// (a restarted node given the same registry) is replaced, so the metrics
// read the running node, not the one before.
func register(reg *prometheus.Registry, c prometheus.Collector) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		reg.Unregister(are.ExistingCollector)
		_ = reg.Register(c)
	}
}

// StoreTimings returns the node's database timings so far: its flushes,
// writes and new journal epochs.
func (n *Node) StoreTimings() store.Timings { return n.db.Timings() }
