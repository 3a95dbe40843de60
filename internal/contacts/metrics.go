package contacts

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/consent"
)

type metrics struct {
	rejected *prometheus.CounterVec
	received *prometheus.CounterVec
	// unaudited counts requests from unknown peers left out of the audit
	// log (over StrangerAudits a minute).
	unaudited prometheus.Counter
}

// states are the contact states reported by parley_contacts.
var states = []consent.State{
	consent.StatePendingIn, consent.StatePendingOut, consent.StateActive,
	consent.StateExpired, consent.StateDenied, consent.StateRevoked,
}

func newMetrics(reg prometheus.Registerer, s *Service) *metrics {
	m := &metrics{
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_contact_rejected_total",
			Help: "Contact messages and certificates refused, by reason (nothing of them is stored).",
		}, []string{"reason"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_contact_messages_total", Help: "Contact messages received on /parley/contact/1, by kind.",
		}, []string{"kind"}),
		unaudited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_contact_requests_unaudited_total",
			Help: "Contact requests from peers the node does not know left out of the audit log (over the rate it writes them at).",
		}),
	}
	if reg != nil {
		m.rejected = register(reg, m.rejected)
		m.received = register(reg, m.received)
		if err := reg.Register(m.unaudited); err != nil {
			if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
				if old, ok := are.ExistingCollector.(prometheus.Counter); ok {
					m.unaudited = old
				}
			}
		}
		_ = reg.Register(stateCollector{s}) // AlreadyRegistered after a restart on one registry
	}
	return m
}

// register registers c, or returns the collector registered before it (a
// node restarted on one registry keeps counting in the same series).
func register(reg prometheus.Registerer, c *prometheus.CounterVec) *prometheus.CounterVec {
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if old, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return old
			}
		}
	}
	return c
}

// stateCollector reports how many contacts are in each state.
type stateCollector struct{ s *Service }

var contactsDesc = prometheus.NewDesc("parley_contacts", "Contacts by state.", []string{"state"}, nil)

func (stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- contactsDesc }

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	n := make(map[consent.State]int, len(states))
	for _, ct := range c.s.book.List(c.s.now()) {
		n[ct.State]++
	}
	for _, st := range states {
		ch <- prometheus.MustNewConstMetric(contactsDesc, prometheus.GaugeValue, float64(n[st]), string(st))
	}
}
