package node

import (
	"crypto/sha256"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// messageID names a GossipSub message by the hash of its bytes, the same
// hash that names a room event, so duplicates are dropped by content.
func messageID(m *pb.Message) string {
	h := sha256.Sum256(m.Data)
	return string(h[:])
}

// registerMetrics adds the node's collectors to its registry. Registering
// twice (a restarted node given the same registry) is not an error.
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
	for _, c := range cs {
		_ = n.reg.Register(c) // AlreadyRegistered after a restart on one registry
	}
}
