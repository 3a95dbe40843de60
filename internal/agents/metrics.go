package agents

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	publish  *prometheus.CounterVec // kind (card, withdraw), result (ok, error)
	sent     *prometheus.CounterVec // result
	received prometheus.Counter
	rejected *prometheus.CounterVec // reason
	swept    prometheus.Counter
	find     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, s *Service) *metrics {
	m := &metrics{
		publish: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_agent_card_publish_total", Help: "Agent cards and withdrawals put in the DHT, by kind and result.",
		}, []string{"kind", "result"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_presence_sent_total", Help: "Presence messages sent to contacts, by result.",
		}, []string{"result"}),
		received: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_presence_received_total", Help: "Presence messages taken from contacts.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_discovery_rejected_total", Help: "Presence messages and agent cards refused, by reason.",
		}, []string{"reason"}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_agents_swept_total", Help: "Local agents removed for want of a heartbeat.",
		}),
		find: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "parley_agent_find_seconds", Help: "Duration of agent lookups (find).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}),
	}
	if reg == nil {
		return m
	}
	m.publish = register(reg, m.publish)
	m.sent = register(reg, m.sent)
	m.received = register(reg, m.received)
	m.rejected = register(reg, m.rejected)
	m.swept = register(reg, m.swept)
	m.find = register(reg, m.find)
	_ = reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "parley_agents_local", Help: "Live agents registered on this node.",
	}, func() float64 { return float64(len(s.List())) })) // AlreadyRegistered after a restart on one registry
	return m
}

// register registers c, or returns the collector registered before it (a
// node restarted on one registry keeps counting in the same series).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if old, ok := are.ExistingCollector.(C); ok {
				return old
			}
		}
	}
	return c
}
