package rooms

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	accepted  prometheus.Counter
	duplicate prometheus.Counter
	rejected  *prometheus.CounterVec
	synced    prometheus.Counter
	syncs     *prometheus.CounterVec
	forks     prometheus.Counter
	// events of a node out of the room taken because a member built on them
	builtOn  prometheus.Counter
	corrupt  prometheus.Counter
	repaired prometheus.Counter
	stalls   prometheus.Counter
	// syncs asked because a member's Hello showed events this node lacked
	syncBacks prometheus.Counter
	// anti-entropy turns: a sync asked for, or skipped while the room's
	// syncs keep finding nothing to fetch
	antiEntropy *prometheus.CounterVec
	// accepted gossip events GossipSub could not hand to a room's full
	// subscription (fetched by sync instead)
	overflow prometheus.Counter
	// rooms that could not be opened at start (damaged state)
	openFailed prometheus.Counter
	// invites from nodes that are not contacts: held for the user, or
	// refused at the bounds
	invitesHeld, invitesRefused prometheus.Counter
	// rooms told back and dropped unopened, by reason (retell.go)
	toldBackDropped *prometheus.CounterVec
	// asks of a peer which shared rooms it lacks, by result (retell.go)
	heldAsks *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, m *Manager) *metrics {
	mt := &metrics{
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_stored_total", Help: "Room events checked and stored (own and others').",
		}),
		duplicate: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_duplicate_total", Help: "Room events received again after they were stored.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_room_events_rejected_total", Help: "Room events refused, by reason.",
		}, []string{"reason"}),
		synced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_sync_events_received_total", Help: "Events received through /parley/sync/1.",
		}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_room_sync_sessions_total", Help: "Sync sessions, by role and result.",
		}, []string{"role", "result"}),
		forks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_event_forks_total", Help: "Room events stored that reuse a seq their author had used (kept beside the first).",
		}),
		builtOn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_built_on_total", Help: "Events of a node out of the room taken because a member's event was built on them (a removal that crossed its posts).",
		}),
		corrupt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_corrupt_total", Help: "Stored room events found damaged on read (unreadable, or not matching their ID).",
		}),
		repaired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_repaired_total", Help: "Damaged room events fetched again from members and rewritten.",
		}),
		invitesHeld: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_invites_held_total", Help: "Invites from nodes that are not contacts, kept for the user's answer.",
		}),
		invitesRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_invites_refused_total", Help: "Invites from nodes that are not contacts refused: over the bounds, or declined.",
		}),
		toldBackDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_rooms_told_back_dropped_total", Help: "Rooms told back to this node and dropped unopened: over the bounds (cap), found out by a catch-up (out), or never confirmed (expired).",
		}, []string{"reason"}),
		heldAsks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_rooms_held_asks_total", Help: "Asks of a connected peer which rooms shared with it it lacks (to tell them back), by result: answered, or unanswered (asked again once the peer serves the protocol).",
		}, []string{"result"}),
		openFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_rooms_open_failed_total", Help: "Rooms of the room list that could not be opened at start (their state is damaged).",
		}),
		overflow: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_gossip_overflow_total", Help: "Gossip events accepted but dropped by a room's full subscription; sync fetches them.",
		}),
		stalls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_sync_backoffs_total", Help: "Syncs whose events were all refused, after which the room backed off from the peer.",
		}),
		syncBacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_sync_backs_total", Help: "Syncs asked of a member because its Hello showed events this node lacked.",
		}),
		antiEntropy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_room_antientropy_turns_total", Help: "Rooms' periodic catch-up turns: synced, or skipped while the room's syncs found nothing to fetch.",
		}, []string{"outcome"}),
	}
	if reg != nil {
		pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_room_pending_events", Help: "Events waiting for their parents, all rooms.",
		}, func() float64 {
			m.mu.RLock()
			defer m.mu.RUnlock()
			var n int64
			for _, r := range m.rooms {
				n += r.pendingLen.Load()
			}
			return float64(n)
		})
		pendingBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_room_pending_bytes", Help: "Memory held by events waiting for their parents, all rooms (approximate; bounded by the node's pending share).",
		}, func() float64 { return float64(m.pendingShare.Bytes()) })
		for _, c := range []prometheus.Collector{pendingBytes, mt.accepted, mt.duplicate, mt.rejected, mt.synced, mt.syncs, mt.stalls, mt.syncBacks, mt.antiEntropy, mt.overflow, mt.openFailed, mt.invitesHeld, mt.invitesRefused, mt.toldBackDropped, mt.heldAsks, mt.forks, mt.builtOn, mt.corrupt, mt.repaired, pending} {
			_ = reg.Register(c)
		}
	}
	return mt
}
