package rooms

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	dto "github.com/prometheus/client_model/go"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Validate runs a room topic's GossipSub validator on data as if it came
// from a peer, for tests of hostile input.
func (m *Manager) Validate(id identity.RoomID, from peer.ID, data []byte) pubsub.ValidationResult {
	r := m.room(id)
	topic := r.topicName()
	return r.validate(context.Background(), from, &pubsub.Message{Message: &pb.Message{Data: data, Topic: &topic}, ReceivedFrom: from})
}

// SendInviteNotice sends target the notice of an invite event, as Invite
// does, from any host: tests of invites that are not what they claim.
func SendInviteNotice(ctx context.Context, h host.Host, target peer.ID, id identity.RoomID, wire []byte, topic string) error {
	return sendInviteNotice(ctx, h, target, inviteNotice{Room: string(id), Event: wire, Topic: topic})
}

// VVs returns a room's accepted and committed version vectors.
func (m *Manager) VVs(id identity.RoomID) (map[peer.ID]uint64, map[peer.ID]uint64) {
	r := m.room(id)
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, c := map[peer.ID]uint64{}, map[peer.ID]uint64{}
	for k, v := range r.vv {
		a[k] = v
	}
	for k, v := range r.committed {
		c[k] = v
	}
	return a, c
}

// MeshHas reports whether p is in this node's GossipSub mesh of a room.
func (m *Manager) MeshHas(id identity.RoomID, p peer.ID) bool {
	topic := m.TopicOf(id)
	m.meshMu.Lock()
	defer m.meshMu.Unlock()
	return m.mesh[topic][p]
}

// SetHelloVVLimit sets the most authors this node's Hellos list, in
// place of MaxVV, so that a room with more authors than one Hello lists
// needs tens of keys, not thousands.
func (m *Manager) SetHelloVVLimit(n int) { m.helloVV.Store(int64(n)) }

// SetAskLimit sets the most events a requester asks for per sync round,
// and returns a function that puts it back.
func SetAskLimit(n int) func() {
	old := askLimit.Swap(int64(n))
	return func() { askLimit.Store(old) }
}

// SetSyncRetryFirst sets the first wait before a failed catch-up is asked
// again (then twice that, …), and returns a function that puts it back.
func SetSyncRetryFirst(d time.Duration) func() {
	old := syncRetryFirst.Swap(int64(d))
	return func() { syncRetryFirst.Store(old) }
}

// SetUnstoredWait sets how long own events that went out unstored wait
// for their parents, and returns a function that puts it back.
func SetUnstoredWait(d time.Duration) func() {
	old := unstoredWait.Swap(int64(d))
	return func() { unstoredWait.Store(old) }
}

// HoldInviteCatchUp makes room id act as while a catch-up after an invite
// of this node runs, until release is called.
func (m *Manager) HoldInviteCatchUp(id identity.RoomID) (release func()) {
	r := m.room(id)
	r.beginInviteCatchUp()
	return r.endInviteCatchUp
}

// KeepsViews reports whether a room keeps its recent arrivals' views (its
// goroutine runs).
func (m *Manager) KeepsViews(id identity.RoomID) bool {
	r := m.room(id)
	r.viewMu.Lock()
	defer r.viewMu.Unlock()
	return r.views != nil
}

// HoldSyncs runs hold before each fsync of this node's own events (nil:
// none), so tests can keep batches waiting for their fsync.
func (m *Manager) HoldSyncs(hold func()) {
	if hold == nil {
		m.beforeSync.Store(nil)
		return
	}
	m.beforeSync.Store(&hold)
}

// HoldTakes runs hold before each room's subscription reader takes an
// event from gossip (nil: none), so tests can stall the reader.
func (m *Manager) HoldTakes(hold func()) {
	if hold == nil {
		m.beforeTake.Store(nil)
		return
	}
	m.beforeTake.Store(&hold)
}

// FailSyncs makes fault decide, before each fsync of this node's own
// events, whether it fails with the error returned instead of running
// (nil fault: none fails).
func (m *Manager) FailSyncs(fault func() error) {
	if fault == nil {
		m.syncFault.Store(nil)
		return
	}
	m.syncFault.Store(&fault)
}

// FailStore makes fault decide, before each room's space check (space
// set) and each of its writes, whether it fails with the error returned
// (nil fault: none fails).
func (m *Manager) FailStore(fault func(space bool) error) {
	if fault == nil {
		m.storeFault.Store(nil)
		return
	}
	m.storeFault.Store(&fault)
}

// Queued is how many live inputs wait in room id's inbox.
func (m *Manager) Queued(id identity.RoomID) int64 { return m.room(id).queued.Load() }

// Reading reports whether room id's subscription reader runs.
func (m *Manager) Reading(id identity.RoomID) bool {
	gs := m.room(id).gsub.Load()
	if gs == nil {
		return false
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return gs.reading
}

// SetSubBuffer sets the buffer of the room subscriptions made from now on,
// and returns a function that puts it back.
func SetSubBuffer(n int) func() {
	old := subBuffer.Swap(int32(n))
	return func() { subBuffer.Store(old) }
}

// Overflows is how many accepted gossip events this node's full room
// subscriptions could not take.
func (m *Manager) Overflows() float64 {
	var c dto.Metric
	if err := m.metrics.overflow.Write(&c); err != nil {
		return -1
	}
	return c.GetCounter().GetValue()
}

// RoomWaits returns what a sync round (barrier, missingIDs) and a post
// (say) wait on, bound to room id's room object as it is now, so a test can
// call them once that room has closed, as a sync under way does when the
// events it brings close the room.
func (m *Manager) RoomWaits(id identity.RoomID) (barrier, missing, say func(context.Context) error) {
	r := m.room(id)
	return r.barrier,
		func(ctx context.Context) error {
			_, err := r.missingIDs(ctx)
			return err
		},
		func(ctx context.Context) error {
			_, err := r.say(ctx, &sayReq{agent: identity.HumanAgent, kind: KindMessage, body: []byte("after the close")})
			return err
		}
}

// OpenInvited opens room id as an invitee whose invite named topic does,
// before any of its events is stored.
func (m *Manager) OpenInvited(id identity.RoomID, topic string) error {
	_, err := m.open(id, Meta{Name: "invited", Opened: time.Now().UTC(), Topic: topic}, true)
	return err
}

// ProcessBatch has room id process the events wires (as catch-up) as one
// batch, on the caller's goroutine, so a test chooses what a batch holds.
func (m *Manager) ProcessBatch(id identity.RoomID, wires ...[]byte) error {
	r := m.room(id)
	batch := make([]input, 0, len(wires))
	for _, w := range wires {
		e, eid, err := Decode(w)
		if err != nil {
			return err
		}
		batch = append(batch, input{item: &Item{ID: eid, Event: e, Wire: w}, catchUp: true})
	}
	r.procMu.Lock()
	defer r.procMu.Unlock()
	r.process(r.ctx, batch)
	return nil
}

// Parents returns the parents of stored event eid of room id.
func (m *Manager) Parents(id identity.RoomID, eid ID) ([]ID, error) {
	e, _, err := m.readEvent(id, eid)
	if err != nil {
		return nil, err
	}
	return e.Parents, nil
}

// Wire returns the wire bytes of stored event eid of room id.
func (m *Manager) Wire(id identity.RoomID, eid ID) ([]byte, error) {
	v, ok, err := m.cfg.Store.Lookup(schema.RoomEvent(string(id), eid[:]))
	if err != nil || !ok {
		return nil, fmt.Errorf("no event %s: %v", eid, err)
	}
	_, wire, err := checkStored(eid, v)
	return wire, err
}

// Heads returns a room's heads with their depths.
func (m *Manager) Heads(id identity.RoomID) map[ID]uint64 {
	r := m.room(id)
	r.procMu.Lock()
	defer r.procMu.Unlock()
	out := make(map[ID]uint64, len(r.heads))
	for h, d := range r.heads {
		out[h] = d
	}
	return out
}

// SetTipEvery sets how many arrivals pass between two tips, and returns a
// function that puts it back.
func SetTipEvery(n int) func() {
	old := tipEvery.Swap(int64(n))
	return func() { tipEvery.Store(old) }
}

// TipArrival decodes a stored tip and returns the arrival it is as of.
func TipArrival(v []byte) (uint64, error) {
	t, err := unmarshalTip(v)
	return t.arrival, err
}

// StoredTipArrival reads the arrival of room id's tip in the store (false:
// none).
func (m *Manager) StoredTipArrival(id identity.RoomID) (uint64, bool, error) {
	v, ok, err := m.cfg.Store.Lookup(schema.RoomTip(string(id)))
	if err != nil || !ok {
		return 0, false, err
	}
	t, err := unmarshalTip(v)
	return t.arrival, true, err
}

// EmptySyncs returns how many catch-up sessions of a room in a row brought
// no event (anti-entropy's backoff).
func (m *Manager) EmptySyncs(id identity.RoomID) int { return int(m.room(id).emptySyncs.Load()) }

// SendTellBack sends target, from host h, a notice telling it back room
// id: the admitting event, the create event and its own event (retell.go),
// and returns target's answer.
func SendTellBack(ctx context.Context, h host.Host, target peer.ID, id identity.RoomID, event, create, own []byte) error {
	return sendInviteNotice(ctx, h, target, inviteNotice{Room: string(id), Event: event, Create: create, Own: own})
}

// AskHeld asks target, from host h, which of the rooms ids it lacks
// (/parley/held/1).
func AskHeld(ctx context.Context, h host.Host, target peer.ID, ids []string) ([]string, error) {
	s, err := h.NewStream(ctx, target, ProtocolHeld)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := writeCBORFrame(s, heldAsk{Rooms: ids}); err != nil {
		return nil, err
	}
	_ = s.CloseWrite()
	var ans heldAnswer
	if err := readCBORFrame(s, maxHeldFrame, &ans); err != nil {
		return nil, err
	}
	return ans.Lacks, nil
}

// ServeHeld makes host h answer /parley/held/1 with answer(ask), or reset
// the stream when answer returns ok false: a peer that answers as it
// pleases.
func ServeHeld(h host.Host, answer func(ask []string) (lacks []string, ok bool)) {
	ServeHeldOn(h, func(_ string, ask []string) ([]string, bool) { return answer(ask) })
}

// ServeHeldOn is ServeHeld with the ID of the connection each ask came on.
func ServeHeldOn(h host.Host, answer func(conn string, ask []string) (lacks []string, ok bool)) {
	h.SetStreamHandler(ProtocolHeld, func(s network.Stream) {
		defer s.Close()
		var ask heldAsk
		if err := readCBORFrame(s, maxHeldFrame, &ask); err != nil {
			s.Reset()
			return
		}
		lacks, ok := answer(s.Conn().ID(), ask.Rooms)
		if !ok {
			s.Reset()
			return
		}
		_ = writeCBORFrame(s, heldAnswer{Lacks: lacks})
	})
}

// Provisional reports whether room id is open on this node as a room told
// back that no catch-up has confirmed yet (retell.go).
func (m *Manager) Provisional(id identity.RoomID) bool {
	r := m.room(id)
	return r != nil && r.provisional()
}

// ProvisionalHeard returns how many members a catch-up of room id, told
// back and not confirmed yet, has ended complete with (0 when the room is
// not provisional).
func (m *Manager) ProvisionalHeard(id identity.RoomID) int {
	r := m.room(id)
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.prov == nil {
		return 0
	}
	return len(r.prov.heard)
}

// HasRecord reports whether this node's store holds a record of room id
// (its entry in the room list, open, left or removed).
func (m *Manager) HasRecord(id identity.RoomID) bool {
	_, ok, err := m.cfg.Store.Lookup(schema.RoomIndex(string(id)))
	return err == nil && ok
}

// ToldBackDropped returns the rooms told back and dropped unopened for
// reason ("cap", "out", "expired").
func (m *Manager) ToldBackDropped(reason string) float64 {
	var d dto.Metric
	if err := m.metrics.toldBackDropped.WithLabelValues(reason).Write(&d); err != nil {
		return -1
	}
	return d.GetCounter().GetValue()
}

// ServeEmptySync makes host h answer every /parley/sync/1 request with
// nothing (a member that serves nothing), and returns how many it answered.
func ServeEmptySync(h host.Host) func() int {
	var n atomic.Int64
	h.SetStreamHandler(ProtocolSync, func(s network.Stream) {
		defer s.Close()
		if _, err := ReadHello(s, 0); err != nil {
			s.Reset()
			return
		}
		if err := WriteFrame(s, &Batch{End: true}); err != nil {
			s.Reset()
			return
		}
		n.Add(1)
	})
	return func() int { return int(n.Load()) }
}

// PendingHeld returns what the rooms' pending pools hold together.
func (m *Manager) PendingHeld() (events, bytes int) {
	return m.pendingShare.Events(), m.pendingShare.Bytes()
}

// Leaving reports whether this node serves room id's sync because it left
// it (no member has shown it holds the leave, and the time is not over).
func (m *Manager) Leaving(id identity.RoomID) bool { return m.leaving.get(id) != nil }

// PendingStrangers returns how many events room id's pool holds as
// strangers' (their author refused by the policy when they came).
func (m *Manager) PendingStrangers(id identity.RoomID) int {
	r := m.room(id)
	r.procMu.Lock()
	defer r.procMu.Unlock()
	return r.pending.strangers
}

// ServeSync stops (serve false) or starts again serving /parley/sync/1, as
// a node does before its rooms are open and once they are.
func (m *Manager) ServeSync(serve bool) {
	if serve {
		m.cfg.Host.SetStreamHandler(ProtocolSync, m.handleSync)
		return
	}
	m.cfg.Host.RemoveStreamHandler(ProtocolSync)
}

// HandleSync serves one /parley/sync/1 stream as the manager does.
func (m *Manager) HandleSync(s network.Stream) { m.handleSync(s) }

// SyncRetry reports room id's catch-ups with p asked again after failures
// in p's connected period: how many were begun, and whether one waits.
func (m *Manager) SyncRetry(id identity.RoomID, p peer.ID) (n int, waiting bool) {
	r := m.room(id)
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := r.syncRetries[p]
	if c == nil {
		return 0, false
	}
	return c.n, c.stop != nil
}

// RequestSync asks room id for a catch-up with p, as a graft into its
// mesh or a nudge does.
func (m *Manager) RequestSync(id identity.RoomID, p peer.ID) { m.room(id).requestSync(p) }

// SetSyncSilence sets how long a catch-up waits without a byte of its
// answer (and, through serveWait, how long a responder waits for a serving
// slot) and returns a function that restores it.
func SetSyncSilence(d time.Duration) func() {
	old := syncSilence.Swap(int64(d))
	return func() { syncSilence.Store(old) }
}

// HoldServing takes every one of the node's serving slots, as catch-ups it
// serves to others would, until release.
func (m *Manager) HoldServing() (release func()) {
	n := cap(m.serving)
	for range n {
		m.serving <- struct{}{}
	}
	return func() {
		for range n {
			<-m.serving
		}
	}
}

// ServeSlots is how many sync requests a node serves at once.
func ServeSlots() int { return serveSlots() }

// Serving is how many of the node's serving slots are taken.
func (m *Manager) Serving() int { return len(m.serving) }

// ServeHeldAgain makes host h serve /parley/held/1 with m's handler again (a
// test took it away: rooms that start serving late).
func (m *Manager) ServeHeldAgain(h host.Host) { h.SetStreamHandler(ProtocolHeld, m.handleHeld) }

// HeldAsks returns the asks of which shared rooms a peer lacks that ended
// with result ("answered", "unanswered").
func (m *Manager) HeldAsks(result string) float64 {
	var d dto.Metric
	if err := m.metrics.heldAsks.WithLabelValues(result).Write(&d); err != nil {
		return -1
	}
	return d.GetCounter().GetValue()
}
