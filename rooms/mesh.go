package rooms

import (
	"context"
	"io"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/identity"
)

// ProtocolNudge asks a member to catch up now: the stream carries one room
// ID (at most 64 bytes) and nothing comes back. A node sends it after
// publishing its own events while its GossipSub mesh for the room is still
// empty (just after joining), and to a peer just taken into that mesh, so
// events that went out without the member do not wait for anti-entropy.
const ProtocolNudge protocol.ID = "/parley/nudge/1"

// meshTracer follows GossipSub's mesh (GRAFT and PRUNE) per topic. Pass
// Manager.Tracer to pubsub.WithRawTracer.
type meshTracer struct{ m *Manager }

var _ pubsub.RawTracer = meshTracer{}

// Tracer returns the GossipSub tracer that lets rooms know their mesh.
func (m *Manager) Tracer() pubsub.RawTracer { return meshTracer{m} }

func (t meshTracer) Graft(p peer.ID, topic string) {
	t.m.meshDelta(topic, p, true)
	t.m.grafted(topic, p)
}
func (t meshTracer) Prune(p peer.ID, topic string) { t.m.meshDelta(topic, p, false) }
func (t meshTracer) Leave(topic string)            { t.m.meshDelta(topic, "", false) }

// UndeliverableMessage: GossipSub dropped an accepted event because the
// room's subscription was full. It has been relayed; the room fetches it
// from the peer that sent it.
func (t meshTracer) UndeliverableMessage(msg *pubsub.Message) { t.m.overflowed(msg) }

// OnClosedOutboundStream: GossipSub lost its stream to p (the peer
// disconnected, or was blacklisted) and took p out of every mesh without
// a Prune; the rooms must forget p too, or a room that believes its mesh
// holds p would publish into an empty mesh and not nudge p to catch up.
func (t meshTracer) OnClosedOutboundStream(p peer.ID) { t.m.meshGone(p) }

func (meshTracer) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (meshTracer) Join(string)                                          {}
func (meshTracer) ValidateMessage(*pubsub.Message)                      {}
func (meshTracer) DeliverMessage(*pubsub.Message)                       {}
func (meshTracer) RejectMessage(*pubsub.Message, string)                {}
func (meshTracer) DuplicateMessage(*pubsub.Message)                     {}
func (meshTracer) ThrottlePeer(peer.ID)                                 {}
func (meshTracer) RecvRPC(*pubsub.RPC)                                  {}
func (meshTracer) SendRPC(*pubsub.RPC, peer.ID)                         {}
func (meshTracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
func (meshTracer) DropRPC(*pubsub.RPC, peer.ID)                         {}

// overflowed handles an accepted event that a room's subscription could
// not take (it runs on GossipSub's event loop: nothing here waits).
func (m *Manager) overflowed(msg *pubsub.Message) {
	m.mu.RLock()
	r := m.topics[msg.GetTopic()]
	m.mu.RUnlock()
	if r == nil {
		return // the subscription's filter passes other nodes' events only
	}
	m.metrics.overflow.Inc()
	if gs := r.gsub.Load(); gs != nil {
		gs.drop()
	}
	r.requestSync(msg.ReceivedFrom)
	if it, ok := msg.ValidatorData.(*Item); ok {
		r.fetchDropped(it.ID, msg.ReceivedFrom, 0)
	}
}

// Retries of the sync for an event a full subscription dropped: the
// sender may not serve it yet when the first sync asks (its own event is
// served once fsynced, a relayed one once its reader stored it), so the
// room looks for the event after overflowRetry, twice that, and so on,
// overflowTries times, and syncs again while it lacks it.
const (
	overflowRetry = time.Second
	overflowTries = 3
)

// fetchDropped syncs with from again, after overflowRetry<<try, unless
// the room has stored event id by then.
func (r *room) fetchDropped(id ID, from peer.ID, try int) {
	time.AfterFunc(overflowRetry<<try, func() {
		if !r.enter() {
			return // closed: its store may be too
		}
		defer r.leave()
		if _, ok := r.depthOfShared(id); ok {
			return
		}
		r.requestSync(from)
		if try+1 < overflowTries {
			r.fetchDropped(id, from, try+1)
		}
	})
}

// meshDelta records a peer entering or leaving a topic's mesh; p empty
// clears the topic.
func (m *Manager) meshDelta(topic string, p peer.ID, in bool) {
	m.meshMu.Lock()
	defer m.meshMu.Unlock()
	if m.mesh == nil {
		m.mesh = make(map[string]map[peer.ID]bool)
	}
	switch {
	case p == "":
		delete(m.mesh, topic)
	case in:
		if m.mesh[topic] == nil {
			m.mesh[topic] = make(map[peer.ID]bool)
		}
		m.mesh[topic][p] = true
	default:
		delete(m.mesh[topic], p)
	}
}

// grafted nudges p, just taken into this node's mesh of a room's topic,
// to catch up. What this node sent on the topic before went to a mesh
// without p, and GossipSub's gossip (IHAVE) goes only to peers outside the
// mesh, so without the nudge p would get those events at its next
// anti-entropy round at best. It happens after every invite: the invited
// node joins the topic before its catch-up tells it the members, so its
// mesh forms at a heartbeat after the catch-up, and an event posted in
// between (an ask to the room right after the invite) reached it only by
// anti-entropy. The nudge waits until what the room took so far is
// stored, its own events durable, so that p's sync is served them. It
// runs on GossipSub's event loop: nothing here waits.
func (m *Manager) grafted(topic string, p peer.ID) {
	m.mu.RLock()
	r := m.topics[topic]
	m.mu.RUnlock()
	if r == nil || p == m.self {
		return
	}
	r.goRoom(func(ctx context.Context) {
		if err := r.barrier(ctx); err != nil {
			return
		}
		r.nudge(ctx, p)
	})
}

// meshGone takes p out of every topic's mesh.
func (m *Manager) meshGone(p peer.ID) {
	m.meshMu.Lock()
	defer m.meshMu.Unlock()
	for _, ps := range m.mesh {
		delete(ps, p)
	}
}

// meshSize is the number of peers in a topic's mesh.
func (m *Manager) meshSize(topic string) int {
	m.meshMu.Lock()
	defer m.meshMu.Unlock()
	return len(m.mesh[topic])
}

// reachable reports whether the node holds a connection to p, direct or
// through a relay: a relayed (limited) connection carries nudges and syncs,
// not GossipSub.
func (m *Manager) reachable(p peer.ID) bool {
	c := m.cfg.Host.Network().Connectedness(p)
	return c == network.Connected || c == network.Limited
}

// nudgeMembers asks members to catch up with this node: all connected
// members, or with all false only those reached through a relay alone
// (GossipSub does not run over relayed connections, so a published event
// reaches them only this way or by anti-entropy).
func (r *room) nudgeMembers(all bool) {
	for _, p := range r.memberList() {
		if p == r.m.self {
			continue
		}
		switch r.m.cfg.Host.Network().Connectedness(p) {
		case network.Limited:
		case network.Connected:
			if !all {
				continue
			}
		default:
			continue
		}
		r.m.spawn(func() { r.nudge(r.m.ctx, p) })
	}
}

// nudge asks member p to catch up with this node now (ProtocolNudge).
func (r *room) nudge(ctx context.Context, p peer.ID) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := r.m.cfg.Host.NewStream(network.WithAllowLimitedConn(ctx, "nudge"), p, ProtocolNudge)
	if err != nil {
		return
	}
	defer s.Close()
	_, _ = s.Write([]byte(r.id))
}

// handleNudge serves ProtocolNudge: a member says it has news.
func (m *Manager) handleNudge(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(io.LimitReader(s, 65))
	if err != nil || len(b) > 64 {
		s.Reset()
		return
	}
	id, err := identity.ParseRoomID(string(b))
	if err != nil {
		s.Reset()
		return
	}
	remote := s.Conn().RemotePeer()
	if r := m.room(id); r != nil && r.isMember(remote) && m.cfg.Policy.Allowed(remote) == nil {
		r.requestSync(remote)
	}
}

// Revet rebuilds the GossipSub mesh of each room whose mesh holds a peer
// that PeerFilter refuses now: a contact this node revoked or denied (or
// that revoked it), or a co-member no longer vouched for. GossipSub's peer
// filter vets only peers that join a mesh, so such a peer stayed in it and
// was sent every event this node published after. The node calls it when
// its contacts change, and anti-entropy once a period.
func (m *Manager) Revet() {
	m.meshMu.Lock()
	held := make(map[string][]peer.ID, len(m.mesh))
	for topic, ps := range m.mesh {
		for p := range ps {
			held[topic] = append(held[topic], p)
		}
	}
	m.meshMu.Unlock()
	for topic, ps := range held {
		for _, p := range ps {
			if m.PeerFilter(p, topic) {
				continue
			}
			m.mu.RLock()
			r := m.topics[topic]
			m.mu.RUnlock()
			if r != nil {
				m.spawn(func() { m.refreshTopic(r) })
			}
			break
		}
	}
}
