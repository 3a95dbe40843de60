package reconnect

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	dials     *prometheus.CounterVec
	stored    prometheus.Counter
	cut       prometheus.Counter
	wanted    prometheus.Gauge
	connected prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		dials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_reconnect_dials_total",
			Help: "Redials of contacts and room members, by result (ok, failed).",
		}, []string{"result"}),
		stored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_reconnect_addrs_stored_total",
			Help: "Times a peer's addresses were stored because they changed.",
		}),
		cut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_reconnect_addrs_cut_total",
			Help: "Times a peer's addresses were more than a record keeps (MaxAddrs, or under 1 KiB in all) and were cut.",
		}),
		wanted: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_reconnect_wanted_peers",
			Help: "Contacts and room members the node keeps connected.",
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_reconnect_connected_peers",
			Help: "Of the wanted peers, those connected now.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.dials, m.stored, m.cut, m.wanted, m.connected)
	}
	return m
}
