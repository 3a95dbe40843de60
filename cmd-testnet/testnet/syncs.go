package testnet

import (
	dto "github.com/prometheus/client_model/go"
)

// syncCounted is a cluster whose nodes' rooms' catch-up work can be
// counted (in-process nodes: their metrics registries).
type syncCounted interface {
	syncCounts() syncCounts
}

// syncCounts sums, over the running nodes, the rooms' catch-up work.
type syncCounts struct {
	asked  float64 // syncs a node asked of a peer, whatever their result
	backs  float64 // of those, asked because a member's Hello showed it ahead
	events float64 // events received by sync
}

// syncCounter counts a phase's catch-up work: the counts at its end less
// those at its start.
type syncCounter struct {
	c     syncCounted
	start syncCounts
}

func countSyncs(c cluster) *syncCounter {
	s, ok := c.(syncCounted)
	if !ok {
		return nil
	}
	return &syncCounter{c: s, start: s.syncCounts()}
}

// note records the phase's syncs_asked, sync_backs and events_by_sync.
func (s *syncCounter) note(res *ScenarioResult) {
	if s == nil {
		return
	}
	end := s.c.syncCounts()
	res.metric("syncs_asked", end.asked-s.start.asked)
	res.metric("sync_backs", end.backs-s.start.backs)
	res.metric("events_by_sync", end.events-s.start.events)
}

func (c *inproc) syncCounts() syncCounts {
	var out syncCounts
	for i := range c.Len() {
		n := c.net.Node(i)
		if n == nil {
			continue
		}
		mfs, err := n.Registry().Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			switch mf.GetName() {
			case "parley_room_sync_sessions_total":
				for _, m := range mf.GetMetric() {
					if label(m, "role") == "requester" {
						out.asked += m.GetCounter().GetValue()
					}
				}
			case "parley_room_sync_backs_total":
				out.backs += sum(mf)
			case "parley_room_sync_events_received_total":
				out.events += sum(mf)
			}
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func sum(mf *dto.MetricFamily) float64 {
	var v float64
	for _, m := range mf.GetMetric() {
		v += m.GetCounter().GetValue()
	}
	return v
}
