package rooms

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync/atomic"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// TopicPrefix starts the GossipSub topic of every room.
const TopicPrefix = "/parley/room/"

// TopicFor returns the GossipSub topic of the room whose create event
// carries nonce. The nonce is known to members only (it is in the create
// event, which only members fetch), so the topic names no room: a peer
// that sees a node's subscriptions cannot tell which rooms it is in, nor
// derive a room's ID, nor find the topic of a room whose ID it knows.
func TopicFor(nonce []byte) string {
	h := sha256.New()
	h.Write([]byte("parley-room-topic\x00"))
	h.Write(nonce)
	return TopicPrefix + idEnc.EncodeToString(h.Sum(nil)[:16])
}

// validTopic reports whether s has the form of a room topic.
func validTopic(s string) bool {
	rest, ok := strings.CutPrefix(s, TopicPrefix)
	if !ok || len(rest) != 26 {
		return false
	}
	_, err := idEnc.DecodeString(rest)
	return err == nil
}

// TopicOf returns the GossipSub topic of a room this node is in, "" if
// it is not in the room or does not know the topic yet (an invitee learns
// it with its invite, or with the room's create event).
func (m *Manager) TopicOf(id identity.RoomID) string {
	r := m.room(id)
	if r == nil {
		return ""
	}
	return r.topicName()
}

// HasTopic reports whether name is the GossipSub topic of a room this
// node has open. GossipSub's event loop calls it, through the node's
// subscription filter, for every topic a peer announces: it takes mu only.
func (m *Manager) HasTopic(name string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.topics[name] != nil
}

// topicName is the room's current topic ("" while unknown).
func (r *room) topicName() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.topicStr
}

// currentTopic is the joined topic, nil while the room has none.
func (r *room) currentTopic() *pubsub.Topic {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.topic
}

// topicFromStore derives the topic from the stored create event, for a
// room recorded before topics were kept with it (they named the room ID
// then). It returns "" if the create event is not stored.
func (r *room) topicFromStore() string {
	r.mu.RLock()
	creator := r.meta.Creator
	r.mu.RUnlock()
	if creator == "" {
		return ""
	}
	idb, ok, err := r.m.cfg.Store.Lookup(schema.RoomAuthorSeq(string(r.id), []byte(creator), 1))
	if err != nil || !ok || len(idb) != len(ID{}) {
		return ""
	}
	e, _, err := r.m.readEvent(r.id, ID(idb))
	if err != nil || !r.founds(e) {
		return ""
	}
	return TopicFor(e.Body[:roomNonceLen])
}

// joinTopic makes name the room's topic: its validator (gossip.go) and a
// subscription, whose reader (take) hands the events accepted to the
// room. The caller holds openMu (GossipSub's event loop calls PeerFilter,
// which takes mu).
func (m *Manager) joinTopic(r *room, name string) error {
	m.mu.Lock()
	if other := m.topics[name]; other != nil && other != r {
		m.mu.Unlock()
		return fmt.Errorf("rooms: topic of room %s is taken by room %s", r.id, other.id)
	}
	m.topics[name] = r
	m.mu.Unlock()
	undo := func() {
		m.mu.Lock()
		if m.topics[name] == r {
			delete(m.topics, name)
		}
		m.mu.Unlock()
	}
	if err := m.ps.RegisterTopicValidator(name, r.validate, pubsub.WithValidatorInline(true)); err != nil {
		undo()
		return fmt.Errorf("rooms: room %s: validator: %w", r.id, err)
	}
	t, err := m.ps.Join(name)
	if err != nil {
		_ = m.ps.UnregisterTopicValidator(name)
		undo()
		return fmt.Errorf("rooms: room %s: join topic: %w", r.id, err)
	}
	unsub, err := r.subscribe(t)
	if err != nil {
		_ = t.Close()
		_ = m.ps.UnregisterTopicValidator(name)
		undo()
		return fmt.Errorf("rooms: room %s: subscribe topic: %w", r.id, err)
	}
	r.mu.Lock()
	r.topic, r.unsub, r.topicStr = t, unsub, name
	r.mu.Unlock()
	return nil
}

// leaveTopic undoes joinTopic. The caller holds openMu.
func (m *Manager) leaveTopic(r *room) {
	r.mu.Lock()
	t, unsub, name := r.topic, r.unsub, r.topicStr
	r.topic, r.unsub, r.topicStr = nil, nil, ""
	r.mu.Unlock()
	if name == "" {
		return
	}
	if unsub != nil {
		unsub()
	}
	if t != nil {
		// GossipSub's event loop takes the subscription's cancel before
		// this close, so the topic has no subscription left.
		if err := t.Close(); err != nil {
			m.log.Debug("close topic", "room", string(r.id), "err", err)
		}
	}
	if err := m.ps.UnregisterTopicValidator(name); err != nil {
		m.log.Debug("unregister validator", "room", string(r.id), "err", err)
	}
	m.mu.Lock()
	if m.topics[name] == r {
		delete(m.topics, name)
	}
	m.mu.Unlock()
}

// switchTopic moves an open room to topic name (it learned the topic from
// its create event, and the invite said another or none).
func (m *Manager) switchTopic(r *room, name string) {
	m.openMu.Lock()
	defer m.openMu.Unlock()
	if m.room(r.id) != r || r.ctx.Err() != nil || r.topicName() == name {
		return
	}
	m.leaveTopic(r)
	if err := m.joinTopic(r, name); err != nil {
		m.log.Warn("room topic not joined", "room", string(r.id), "err", err)
		return
	}
	for _, p := range r.memberList() {
		if p != m.self {
			r.requestSync(p)
		}
	}
}

// subBuffer is how many accepted events a room's subscription holds for
// its reader. GossipSub drops what a full subscription cannot take (sync
// fetches it later), so it holds seconds of a busy room: the reader waits
// at most gossipWait for a busy room.
var subBuffer atomic.Int32 // tests change it

func init() { subBuffer.Store(1024) }

// subscribe subscribes the room to topic t, the subscription read by
// take (gossip.go), and starts its reader, which stops once the room is
// idle. The returned cancel ends the subscription; a reader still running
// takes what is buffered, then ends.
//
// The subscription takes only other nodes' events: this node's own (its
// Say has them) would pile up in it while no reader runs (the validator
// starts one only for others' events), and once it is full GossipSub
// would drop the next event from another node.
func (r *room) subscribe(t *pubsub.Topic) (cancel func(), err error) {
	self := r.m.self
	others := func(msg *pubsub.Message) bool { return !msg.Local && msg.ReceivedFrom != self }
	sub, err := t.Subscribe(pubsub.WithBufferSize(int(subBuffer.Load())), pubsub.WithMessageFilter(others))
	if err != nil {
		return nil, err
	}
	gs := &gossipSub{sub: sub, reading: true}
	r.gsub.Store(gs)
	// Events may come before the validator sees the new subscription.
	gs.start(r)
	return func() {
		r.gsub.CompareAndSwap(gs, nil)
		sub.Cancel()
	}, nil
}
