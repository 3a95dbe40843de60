package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	msmux "github.com/multiformats/go-multistream"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// A node whose home was put back from an older copy lacks the rooms it
// created or joined since (the rollback fix, own.go, brings back the events
// of rooms it still holds, not rooms it does not). Its co-members still
// count it in and send to it. So a member that holds a room in which a
// connected peer P is in (P created it, or joined since it was last
// admitted, and is not out) asks P, once per connected period (from its
// first connection until its last one closes; again in the period if
// that ask got no answer and P then starts serving the protocol), which
// of those rooms it lacks (/parley/held/1: the room IDs; the answer is the ones it
// has not open, or every one when P does not know the asker as a member,
// see handleHeld). For each, the member tells P the room back on
// /parley/invite/1: the notice carries, beside the invite event (the create
// event for the creator), the signed create event and P's own latest event
// in the room. P checks that the create event founds the room, that the
// invite invites P into it, and that the own event is its own, signed by
// its key, and not a leave: it took part in the room once. That is no proof
// that it still does, so the room opens provisionally (below) and a
// catch-up from a member decides. A told-back room opens only if P's store
// holds no record of it at all (an older copy lacks the record; a record,
// left, removed from or failed to open, is never overwritten by a notice: a
// post of P's that crossed its removal is later than the removal's cutoff,
// and a member that has not learnt the removal holds it). A teller that is
// an active contact trusted to invite opens it at once; any other the
// policy lets tell (a stranger: a co-member the older copy does not know;
// a co-member not trusted to invite) waits for the user, as its invite
// would (Invites, marked ToldBack; AcceptInvite). A revoked, denied or
// expired contact is refused. Rooms P was invited to and never joined are
// told again by their inviter as before (retellInvites), and wait for the
// user when the inviter is not trusted.

// ProtocolHeld asks a member which of the rooms shared with it it lacks.
const ProtocolHeld protocol.ID = "/parley/held/1"

// maxHeldAsk is the most room IDs one ask lists; a node with more rooms
// shared with a peer asks in several.
const maxHeldAsk = 256

// heldAsk lists rooms the asker shares with the peer.
type heldAsk struct {
	Rooms []string `cbor:"1,keyasint"`
}

// heldAnswer names the rooms of an ask that the peer has not open (all of
// them, to an asker it does not know as a member: see handleHeld).
type heldAnswer struct {
	Lacks []string `cbor:"1,keyasint,omitempty"`
}

// maxHeldFrame bounds an ask or an answer.
const maxHeldFrame = maxHeldAsk*(26+3) + 64 // a room ID is 26 characters

// heldRetries is how many times an ask that got no answer is made again
// while the peer stays connected (it may be starting: its rooms serve the
// protocol a moment after its host connects), one second apart, then two,
// four, ….
const heldRetries = 5

// asking holds the peers asked in their current connected period: a peer
// is asked once from its first connection until its last one closes
// (several connections, or a new one while another stays, ask nothing
// more), and each room is told it once in that period, however often its
// answers name it. An ask that got no answer (the peer's rooms were not
// serving yet, or it ran out of tries) does not count: the peer is asked
// again in the same period once it serves /parley/held/1 (identify's
// push, see Start). mu protects peers.
type asking struct {
	mu    sync.Mutex
	peers map[peer.ID]*askPeriod
}

// askPeriod is what a peer's connected period holds.
type askPeriod struct {
	asked bool                     // an ask is under way, or was answered
	told  map[identity.RoomID]bool // the rooms told it in the period
}

// start reports whether p is to be asked: it was not in this period, or
// its ask got no answer.
func (a *asking) start(p peer.ID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.peers == nil {
		a.peers = make(map[peer.ID]*askPeriod)
	}
	per := a.peers[p]
	if per == nil {
		per = &askPeriod{told: make(map[identity.RoomID]bool)}
		a.peers[p] = per
	}
	if per.asked {
		return false
	}
	per.asked = true
	return true
}

// unanswered records that p's ask got no answer: p is asked again when it
// starts serving the protocol. The rooms told it stay told.
func (a *asking) unanswered(p peer.ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if per := a.peers[p]; per != nil {
		per.asked = false
	}
}

// tell reports whether room id is to be told p: it was not in this
// period (and the period has not ended).
func (a *asking) tell(p peer.ID, id identity.RoomID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	per := a.peers[p]
	if per == nil || per.told[id] {
		return false
	}
	per.told[id] = true
	return true
}

// end ends p's connected period (its last connection closed).
func (a *asking) end(p peer.ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.peers, p)
}

// spokenIn returns the open rooms in which p is a member that has spoken
// since it was (last) admitted, or created the room.
func (m *Manager) spokenIn(p peer.ID) []*room {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*room
	for _, r := range m.rooms {
		r.mu.RLock()
		_, member := r.members[p]
		if member && !r.awaitsJoin(p) && r.prov == nil {
			out = append(out, r)
		}
		r.mu.RUnlock()
	}
	return out
}

// retellRooms asks p which of the rooms it is in with this node it lacks,
// and tells it those back.
func (m *Manager) retellRooms(p peer.ID) {
	if p == m.self || m.cfg.Policy.Allowed(p) != nil || !m.asking.start(p) {
		return
	}
	shared := m.spokenIn(p)
	for len(shared) > 0 {
		part := shared[:min(len(shared), maxHeldAsk)]
		shared = shared[len(part):]
		byID := make(map[string]*room, len(part))
		ask := heldAsk{Rooms: make([]string, 0, len(part))}
		for _, r := range part {
			byID[string(r.id)] = r
			ask.Rooms = append(ask.Rooms, string(r.id))
		}
		lacks, err := m.askHeld(p, ask)
		if err != nil {
			// Asked again once p serves the protocol (Start): a node
			// whose rooms start late, or that was busy past the
			// retries, is still told its rooms back.
			m.asking.unanswered(p)
			m.metrics.heldAsks.WithLabelValues("unanswered").Inc()
			if m.ctx.Err() == nil {
				m.log.Info("asking which rooms a member lacks failed", "remote", p.String(), "err", err)
			}
			return
		}
		m.metrics.heldAsks.WithLabelValues("answered").Inc()
		for _, id := range lacks {
			r := byID[id]
			if r == nil || m.room(r.id) != r || !m.asking.tell(p, r.id) {
				continue // not asked about, told already (in this period), or closed since
			}
			if err := m.tellBackRetrying(r, p); err != nil {
				m.log.Info("telling a member a room it lacks failed", "room", string(r.id), "remote", p.String(), "err", err)
				continue
			}
			m.log.Info("told a member a room it lacks", "room", string(r.id), "remote", p.String())
		}
	}
}

// tellBackRetrying tells p room r back, again (a few times, one second
// apart, then two, …) while p stays connected and the notice failed other
// than by p's refusal: the room is told p once in its connected period.
func (m *Manager) tellBackRetrying(r *room, p peer.ID) error {
	wait := time.Second
	for try := 0; ; try++ {
		err := m.tellBack(r, p)
		if err == nil || try == 3 || errors.Is(err, ErrInviteRefused) || errors.Is(err, network.ErrReset) ||
			m.cfg.Host.Network().Connectedness(p) == network.NotConnected {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-m.ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

// askHeld sends p an ask, again while it is connected and gives no answer.
func (m *Manager) askHeld(p peer.ID, ask heldAsk) ([]string, error) {
	wait := time.Second
	for try := 0; ; try++ {
		var ans heldAnswer
		err := m.exchange(p, ProtocolHeld, ask, &ans)
		if err == nil {
			return ans.Lacks, nil
		}
		if try == heldRetries || !m.askAgain(p, err) || m.cfg.Host.Network().Connectedness(p) == network.NotConnected {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-m.ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait *= 2
	}
}

// askAgain reports whether an ask of p that failed with err is worth
// making again. A reset is the peer's refusal (its policy, or an ask it does
// not take), and a malformed answer will not mend: both are final. So is a
// protocol not supported by a peer whose rooms serve sync already (an
// older version: the rooms serve /parley/held/1 before sync, see Start);
// while they do not, the peer's rooms may still be starting.
func (m *Manager) askAgain(p peer.ID, err error) bool {
	var unsupported msmux.ErrNotSupported[protocol.ID]
	var reset *network.StreamError
	switch {
	case errors.As(err, &reset) && reset.Remote && reset.ErrorCode == network.StreamProtocolNegotiationFailed:
		// The peer's host reset the stream as it did not serve the
		// protocol: asked lazily (the peerstore still listed it, from
		// before the peer restarted), its rooms may still be starting.
		return true
	case errors.Is(err, network.ErrReset), errors.Is(err, ErrMalformed), errors.Is(err, ErrTooLarge):
		return false
	case errors.As(err, &unsupported):
		serves, _ := m.cfg.Host.Peerstore().SupportsProtocols(p, ProtocolSync)
		return len(serves) == 0
	}
	return true
}

// exchange sends p one CBOR frame on proto and reads one back.
func (m *Manager) exchange(p peer.ID, proto protocol.ID, req, ans any) error {
	ctx, cancel := context.WithTimeout(m.ctx, 20*time.Second)
	defer cancel()
	s, err := m.cfg.Host.NewStream(network.WithAllowLimitedConn(ctx, "held"), p, proto)
	if err != nil {
		return err
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(20 * time.Second))
	if err := writeCBORFrame(s, req); err != nil {
		s.Reset()
		return err
	}
	_ = s.CloseWrite()
	if err := readCBORFrame(s, maxHeldFrame, ans); err != nil {
		s.Reset()
		return err
	}
	return nil
}

// handleHeld serves /parley/held/1: it answers which of the rooms asked
// about this node lacks. A room counts as held only if it is open here and
// the asker is a member of it as this node knows: a member learns what it
// may (this node is in the room), and any other asker is answered "lacks"
// for every room it lists, held or not, so it cannot tell which rooms this
// node is in. A room answered "lacks" that this node holds a record of is
// refused when told back (takeTellBack).
func (m *Manager) handleHeld(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(20 * time.Second))
	remote := s.Conn().RemotePeer()
	// A stranger is served: it is a member of no room open here (or the
	// policy would know it), so it is answered "lacks" for every room and
	// learns nothing, and a co-member that an older copy of this node's
	// home does not know can still tell it its rooms back. A revoked,
	// denied or expired contact is refused.
	if err := m.cfg.Policy.Allowed(remote); err != nil && !errors.Is(err, ErrStranger) {
		s.Reset()
		return
	}
	var ask heldAsk
	if err := readCBORFrame(s, maxHeldFrame, &ask); err != nil || len(ask.Rooms) > maxHeldAsk {
		s.Reset()
		return
	}
	var ans heldAnswer
	for _, raw := range ask.Rooms {
		id, err := identity.ParseRoomID(raw)
		if err != nil {
			continue
		}
		if r := m.room(id); r != nil && r.isMember(remote) && !r.provisional() {
			continue // a room told back, not confirmed: "lacks", so that every member tells it (each a source)
		}
		ans.Lacks = append(ans.Lacks, raw)
	}
	_ = writeCBORFrame(s, ans)
}

// tellBack tells p, a member of r that lacks it, the room: its invite
// event (the create event, for the creator), the create event and p's
// latest own event in it.
func (m *Manager) tellBack(r *room, p peer.ID) error {
	r.mu.RLock()
	admit, member := r.members[p]
	creator := r.meta.Creator
	own := r.committed[p]
	name, topic := r.meta.Name, r.meta.Topic
	r.mu.RUnlock()
	if !member || own == 0 {
		return fmt.Errorf("%w: %s is not a member of room %s that spoke in it", ErrInviteRefused, p, r.id)
	}
	n := inviteNotice{Room: string(r.id), Name: name, Topic: topic}
	var err error
	if n.Event, err = m.storedWire(r, admit); err != nil {
		return err
	}
	if creator != p {
		if n.Create, err = m.seqWire(r, creator, 1); err != nil {
			return err
		}
	}
	if n.Own, err = m.ownNotLeave(r, p, own); err != nil {
		return err
	}
	return sendInviteNotice(m.ctx, m.cfg.Host, p, n)
}

// maxOwnBack bounds how many of p's latest events tellBack looks through
// for one that is not a leave.
const maxOwnBack = 256

// ownNotLeave returns the signed bytes of p's latest event in room r, up
// to seq own, that is not a leave: a leave (its own, or an agent's of its)
// is no evidence that p took part (checkTellBack refuses it), and p's
// latest event may well be an agent's leave while p itself is in.
func (m *Manager) ownNotLeave(r *room, p peer.ID, own uint64) ([]byte, error) {
	for seq := own; seq > 0 && own-seq < maxOwnBack; seq-- {
		wire, err := m.seqWire(r, p, seq)
		if err != nil {
			return nil, err
		}
		e, _, err := Decode(wire)
		if err != nil {
			return nil, err
		}
		if e.Kind != KindLeave {
			return wire, nil
		}
	}
	return nil, fmt.Errorf("%w: no event of %s in room %s that is not a leave among its latest %d", ErrInviteRefused, p, r.id, maxOwnBack)
}

// seqWire returns the signed bytes of author's event seq in room r.
func (m *Manager) seqWire(r *room, author peer.ID, seq uint64) ([]byte, error) {
	idb, ok, err := m.cfg.Store.Lookup(schema.RoomAuthorSeq(string(r.id), []byte(author), seq))
	if err != nil || !ok || len(idb) != len(ID{}) {
		return nil, fmt.Errorf("event %d of %s not stored: %v", seq, author, err)
	}
	return m.storedWire(r, ID(idb))
}

// A room told back is provisional: a notice proves that this node once
// took part in the room (its own signed event there), not that it still
// does. The room opens in memory only: no record of it is written, the
// room list, the API and the agents do not see it, and it posts nothing
// (its join neither). It catches up from each teller (every teller heard
// is a source, a stranger too) and from any member connected; membership
// of this node is judged only when such a catch-up ends, at the room's
// state then, never on one event of it (the node's own old leave of a room
// it rejoined since is replayed on the way). A complete catch-up from a
// member that brought events and finds this node in confirms the room: its
// record is written and it is a room like any other (confirmToldBack). One
// that finds it out, with no other catch-up under way, drops the room with
// nothing written (dropToldBack), and the evidence it came with is not
// taken again from that teller while it stays connected. A catch-up that
// brings nothing decides nothing. A room no catch-up confirms within
// ProvisionalTTL is dropped.

// Bounds of the rooms told back that wait for a catch-up to confirm them
// (tests lower them): MaxProvisionalPerTeller is how many provisional rooms
// one teller's notices may have opened, MaxProvisional how many may be
// open in all. Notices past them are refused (and counted).
var MaxProvisionalPerTeller, MaxProvisional atomic.Int32

func init() {
	MaxProvisionalPerTeller.Store(8)
	MaxProvisional.Store(64)
}

// maxJudged bounds the evidence remembered as found out.
const maxJudged = 1024

// ProvisionalTTL is how long a room told back waits for a catch-up to
// confirm it before it is dropped.
var ProvisionalTTL = 10 * time.Minute

// provisional is the state of a room told back that no catch-up has
// confirmed yet; the room's mu protects it.
type provisional struct {
	sources map[peer.ID]ID   // the tellers heard, caught up from → the own event each sent
	opener  peer.ID          // the teller whose notice opened it (the bounds count it)
	running int              // catch-up sessions of the room under way
	sawOut  bool             // a complete catch-up found this node out
	invited bool             // an invite was taken meanwhile (trusted, or accepted by the user)
	heard   map[peer.ID]bool // the members a catch-up ended complete with
	opened  time.Time        // when the room opened (ToldBackWait counts from it)
	gone    bool             // dropped: a notice that raced the drop opens the room afresh
}

// judgedKey is evidence a catch-up found this node out with: the room, the
// teller and the own event it sent.
type judgedKey struct {
	room   identity.RoomID
	teller peer.ID
	own    ID
}

// judgedBook remembers such evidence while the teller stays connected; mu
// protects keys.
type judgedBook struct {
	mu   sync.Mutex
	keys map[judgedKey]bool
}

func (b *judgedBook) add(k judgedKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keys == nil {
		b.keys = make(map[judgedKey]bool)
	}
	if len(b.keys) >= maxJudged {
		for old := range b.keys {
			delete(b.keys, old) // any one: a bound, not a cache
			break
		}
	}
	b.keys[k] = true
}

func (b *judgedBook) has(k judgedKey) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.keys[k]
}

// forget drops what was judged of p's evidence (p disconnected).
func (b *judgedBook) forget(p peer.ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.keys {
		if k.teller == p {
			delete(b.keys, k)
		}
	}
}

// provisional reports whether the room waits for a catch-up to confirm it.
func (r *room) provisional() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.prov != nil
}

// asksToldBack reports whether a provisional room catches up from p, a
// stranger to the policy: p told it the room back, or it is a member of
// the room as its tellers' events show (a member not heard may hold more
// of this node's events: its later leave, say).
func (r *room) asksToldBack(p peer.ID) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.prov == nil || p == "" {
		return false
	}
	_, teller := r.prov.sources[p]
	_, member := r.members[p]
	return teller || member
}

// beginToldBackSession counts a catch-up session of a provisional room,
// and reports whether it is one (judgeToldBack then ends it).
func (r *room) beginToldBackSession() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prov == nil {
		return false
	}
	r.prov.running++
	return true
}

// tellBackEvidence is a told-back notice checked: the room's record to
// open it with and the own event that proves this node took part.
type tellBackEvidence struct {
	meta   Meta
	own    ID
	ownSeq uint64 // the own event's seq in this node's chain of the room
}

// checkTellBack checks a told-back notice of room id from teller: the
// create event founds the room, the admitting event admits this node into
// it (for a room another node created), and the own event is this node's
// in the room, signed by its key, and not its leave (a leave proves that
// it took part, not that it still does). Each event's signature is its
// author's (Decode). The teller, the authenticated peer of the stream, is
// recorded as the inviter: nothing in the notice names it.
func (m *Manager) checkTellBack(id identity.RoomID, n inviteNotice, teller peer.ID) (tellBackEvidence, error) {
	refuse := func(why string) error {
		return fmt.Errorf("%w: room %s told back by %s: %s", ErrInviteRefused, id, teller, why)
	}
	admit, _, err := Decode(n.Event)
	if err != nil {
		return tellBackEvidence{}, err
	}
	own, ownID, err := Decode(n.Own)
	if err != nil {
		return tellBackEvidence{}, err
	}
	if own.Author != m.self || own.Room != id {
		return tellBackEvidence{}, refuse("the event said to be this node's is not this node's in the room")
	}
	if own.Kind == KindLeave {
		// Its own leave, or an agent's: it took part, and may not now.
		// (The creator's removal of another node proves it was in.)
		if target, _, err := own.LeaveTarget(); err != nil || target == "" || target == m.self {
			return tellBackEvidence{}, refuse("the event of this node's is its leave")
		}
	}
	create := admit
	if len(n.Create) > 0 {
		if create, _, err = Decode(n.Create); err != nil {
			return tellBackEvidence{}, err
		}
	}
	if create.Kind != KindCreate || create.Room != id || len(create.Body) < roomNonceLen || DeriveRoomID(create.Author, create.Body[:roomNonceLen]) != id {
		return tellBackEvidence{}, refuse("no create event that founds the room")
	}
	if create.Author != m.self {
		if target, err := admit.InviteTarget(); err != nil || target != m.self || admit.Room != id {
			return tellBackEvidence{}, refuse("no invite of this node into the room")
		}
	}
	name, purpose := splitCreate(create.Body[roomNonceLen:])
	meta := Meta{Name: name, Purpose: purpose, Creator: create.Author, Opened: time.Now().UTC(), Topic: TopicFor(create.Body[:roomNonceLen])}
	if create.Author != m.self {
		meta.InvitedBy = teller
	}
	return tellBackEvidence{meta: meta, own: ownID, ownSeq: own.Seq}, nil
}

// takeTellBack takes a member's notice of a room this node is in and does
// not hold (see the top of this file), sent by remote. A notice from an
// active contact trusted to invite opens the room provisionally at once;
// one from any other node the policy lets tell (a stranger: a co-member an
// older copy of this node's home does not know; a co-member not trusted to
// invite) waits for the user as its invite would (Invites, AcceptInvite).
func (m *Manager) takeTellBack(id identity.RoomID, n inviteNotice, remote peer.ID) error {
	ev, err := m.checkTellBack(id, n, remote)
	if err != nil {
		return err
	}
	if m.judged.has(judgedKey{id, remote, ev.own}) {
		return fmt.Errorf("%w: room %s told back by %s: a catch-up found this node out of it with this very evidence", ErrInviteRefused, id, remote)
	}
	trusted := m.cfg.Policy.Allowed(remote) == nil && m.trustsInvite(remote)
	if r := m.room(id); r != nil {
		if trusted && r.addToldBackSource(remote, ev.own) {
			m.log.Info("room told back again, by another member", "room", string(id), "remote", remote.String())
			r.requestSync(remote)
			return nil
		}
		if !r.provisional() {
			return errHeld
		}
	} else if err := m.holdsRecord(id, ev); err != nil {
		return err
	}
	if !trusted {
		raw, err := encMode.Marshal(n)
		if err != nil {
			return err
		}
		rec := inviteRec{Name: ev.meta.Name, Inviter: remote.String(), Topic: ev.meta.Topic, ToldBack: raw}
		if err := m.holdInvite(id, rec); err != nil {
			return err
		}
		m.log.Info("room told back waits for the user", "room", string(id), "remote", remote.String())
		m.pulse()
		return nil
	}
	return m.openToldBack(id, ev, remote)
}

// holdsRecord returns errHeld if this node holds a record of room id that
// the evidence ev does not go past. One it goes past: the room is recorded
// left, this node's latest event there that it holds is its own leave, and
// ev's own event comes after it in this node's chain. A node posts after
// its leave only once invited back, so the copy's record is older than the
// evidence (left before the copy, joined again since). A removal is never
// gone past: a post that crossed it may come after it in the chain.
func (m *Manager) holdsRecord(id identity.RoomID, ev tellBackEvidence) error {
	if m.room(id) != nil {
		return errHeld
	}
	raw, ok, err := m.cfg.Store.Lookup(schema.RoomIndex(string(id)))
	if err != nil {
		return err
	}
	if !ok {
		if m.leaving.get(id) != nil {
			return errHeld
		}
		return nil
	}
	var meta Meta
	if json.Unmarshal(raw, &meta) != nil || !meta.Left {
		return errHeld
	}
	left, err := m.ownLeaveSeq(id)
	if err != nil || left == 0 || ev.ownSeq <= left {
		return errHeld
	}
	return nil
}

// ownLeaveSeq returns the seq of this node's own leave of room id if it is
// the latest event of this node's that the store holds there, else 0.
func (m *Manager) ownLeaveSeq(id identity.RoomID) (uint64, error) {
	var eid []byte
	err := m.cfg.Store.ScanFrom(schema.RoomAuthorPrefix(string(id), []byte(m.self)), nil, true, func(_, v []byte) bool {
		eid = append([]byte(nil), v...)
		return false
	})
	if err != nil || len(eid) != len(ID{}) {
		return 0, err
	}
	v, ok, err := m.cfg.Store.Lookup(storedKey(id, ID(eid)))
	if err != nil || !ok {
		return 0, err
	}
	_, wire, err := splitStored(v)
	if err != nil {
		return 0, err
	}
	e, _, err := Decode(wire)
	if err != nil || e.Kind != KindLeave || e.Author != m.self {
		return 0, err
	}
	if target, _, err := e.LeaveTarget(); err != nil || target != m.self {
		return 0, err
	}
	return e.Seq, nil
}

// addToldBackSource adds teller as a source of a provisional room, and
// reports whether the room is one.
func (r *room) addToldBackSource(teller peer.ID, own ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prov == nil || r.prov.gone {
		return false
	}
	r.prov.sources[teller] = own
	// A catch-up that found this node out no longer drops the room by
	// itself: the new teller's is heard first (it may bring a
	// re-admission the others lacked).
	r.prov.sawOut = false
	return true
}

// errHeld refuses a room told back that this node holds a record of: open,
// left, removed from, or failed to open. The notice is for rooms an older
// copy lacks altogether; a record is never overwritten by one (a member
// that has not learnt this node's removal yet may hold an own event of it
// later than the removal: a post that crossed it). The same answer for
// each case tells the sender nothing about which.
var errHeld = fmt.Errorf("%w: this node holds a record of the room", ErrInviteRefused)

// openToldBack opens a room told back by teller, provisionally (see the
// top of this file), and catches up from it; a room provisional already
// takes teller as one more source.
func (m *Manager) openToldBack(id identity.RoomID, ev tellBackEvidence, teller peer.ID) error {
	r, fresh, err := m.openProvisional(id, ev, teller)
	if err != nil {
		return err
	}
	m.log.Info("room told back by a member, provisional until a catch-up shows this node in", "room", string(id), "remote", teller.String(), "first", fresh)
	r.requestSync(teller)
	if fresh {
		m.spawn(func() { m.expireToldBack(r) })
		m.spawn(func() { m.waitToldBack(r) })
	}
	return nil
}

// openProvisional opens the room unless this node holds a record of it or
// the bounds are reached. The check and the open are made under openMu,
// as closeRoom takes a room out and records it left under openMu.
func (m *Manager) openProvisional(id identity.RoomID, ev tellBackEvidence, teller peer.ID) (r *room, fresh bool, err error) {
	m.openMu.Lock()
	defer m.openMu.Unlock()
	if r := m.room(id); r != nil {
		if r.addToldBackSource(teller, ev.own) {
			return r, false, nil
		}
		return nil, false, errHeld
	}
	if err := m.holdsRecord(id, ev); err != nil {
		return nil, false, err
	}
	// A room left before the copy and joined again since (holdsRecord):
	// the old leave is no longer this node's to hand out.
	m.leaving.drop(id)
	all, by := m.provisionalCount(teller)
	if all >= int(MaxProvisional.Load()) || by >= int(MaxProvisionalPerTeller.Load()) {
		m.metrics.toldBackDropped.WithLabelValues("cap").Inc()
		return nil, false, fmt.Errorf("%w: %d rooms told back wait for a catch-up (%d of them by %s)", ErrInviteRefused, all, by, teller)
	}
	r, err = m.openLocked(id, ev.meta, false, true, &provisional{sources: map[peer.ID]ID{teller: ev.own}, opener: teller, heard: make(map[peer.ID]bool), opened: time.Now()})
	if err != nil {
		return nil, false, err
	}
	return r, true, nil
}

// provisionalCount counts the provisional rooms, all and those teller's
// notices opened.
func (m *Manager) provisionalCount(teller peer.ID) (all, by int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, r := range m.rooms {
		r.mu.RLock()
		if r.prov != nil {
			all++
			if r.prov.opener == teller {
				by++
			}
		}
		r.mu.RUnlock()
	}
	return all, by
}

// ToldBackWait is how long a room told back waits for every member node
// it knows to be heard (a complete catch-up with each) before it is
// confirmed on the word of the members connected only, in nanoseconds
// (tests lower it).
var ToldBackWait atomic.Int64

func init() { ToldBackWait.Store(int64(2 * time.Minute)) }

// toldBackWait is ToldBackWait as a duration.
func toldBackWait() time.Duration { return time.Duration(ToldBackWait.Load()) }

// judgeToldBack ends a catch-up session of a provisional room with p, which
// ended with err and brought events or not. A session that ended complete
// with a member (as the room knows it then) hears it: what it holds of
// this node's events is here now. This node out, by a complete session
// that brought events, drops the room once no other session is under way
// (a later one may bring a re-admission). This node in confirms it once
// enough members are heard (toldBackReady); until then the members not
// heard and connected are asked.
func (m *Manager) judgeToldBack(r *room, p peer.ID, err error, brought bool) {
	r.mu.Lock()
	pv := r.prov
	if pv == nil {
		r.mu.Unlock()
		return
	}
	pv.running--
	in := r.inToldBackLocked()
	_, fromMember := r.members[p]
	if err == nil && fromMember {
		pv.heard[p] = true
	}
	complete := err == nil && brought && fromMember
	if complete && !in {
		pv.sawOut = true
	}
	out := !in && pv.sawOut && pv.running == 0
	r.mu.Unlock()
	switch {
	case out:
		m.spawn(func() { m.dropToldBack(r, "out") })
		return
	case in && m.toldBackReady(r):
		m.spawn(func() { m.confirmToldBack(r) })
		return
	}
	if err == nil && (brought || in) {
		m.askUnheard(r, p)
	}
}

// inToldBackLocked reports whether the room's state shows this node in:
// it spoke since its last admission, or an invite was taken meanwhile and
// it is a member. Callers hold r.mu.
func (r *room) inToldBackLocked() bool {
	return r.spokeSinceAdmittedLocked() || r.prov != nil && r.prov.invited && r.isMemberLocked(r.m.self)
}

// askUnheard asks the members of a provisional room that are connected
// and not heard yet (but p) to catch this node up.
func (m *Manager) askUnheard(r *room, p peer.ID) {
	for _, q := range m.unheard(r) {
		if err := m.cfg.Policy.Allowed(q); q != p && m.reachable(q) && (err == nil || errors.Is(err, ErrStranger)) {
			r.requestSync(q)
		}
	}
}

// unheard returns the member nodes of a provisional room, this node aside,
// that no catch-up has ended complete with.
func (m *Manager) unheard(r *room) []peer.ID {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.prov == nil {
		return nil
	}
	var out []peer.ID
	for q := range r.members {
		if q != m.self && !r.prov.heard[q] {
			out = append(out, q)
		}
	}
	return out
}

// toldBackReady reports whether enough members of a provisional room are
// heard to confirm it: every member node it knows, or, once ToldBackWait
// has passed since it opened, every one connected (and at least one). A
// single stale member (one that missed this node's later leave, say) must
// not confirm a room on its own word while a member that may hold more of
// this node's events is known: before the wait every member is waited
// for, connected or not; after it, a member connected and not heard
// (refusing, or not answering yet) still holds the room provisional. A
// member the policy cuts off (revoked, denied, expired) is not asked, so
// not waited for; a stranger is asked (asksToldBack), and waited for.
func (m *Manager) toldBackReady(r *room) bool {
	refused := m.refusedUnheard(r)
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.toldBackReadyLocked(refused)
}

// refusedUnheard returns the members of a provisional room not heard that
// the policy refuses outright (cut off: revoked, denied, expired): they
// are not asked, so not waited for. A stranger (a co-member unknown to an
// older copy of this node's home) is asked, and waited for.
func (m *Manager) refusedUnheard(r *room) map[peer.ID]bool {
	refused := make(map[peer.ID]bool)
	for _, q := range m.unheard(r) {
		if err := m.cfg.Policy.Allowed(q); err != nil && !errors.Is(err, ErrStranger) {
			refused[q] = true
		}
	}
	return refused
}

// toldBackReadyLocked is toldBackReady's rule, with the unheard members
// the policy refuses (they are not waited for). Callers hold r.mu.
func (r *room) toldBackReadyLocked(refused map[peer.ID]bool) bool {
	pv := r.prov
	if pv == nil {
		return false
	}
	waited := time.Since(pv.opened) >= toldBackWait()
	heard := false
	for q := range r.members {
		switch {
		case q == r.m.self:
		case pv.heard[q]:
			heard = true
		case refused[q]:
		case !waited || r.m.reachable(q):
			return false
		}
	}
	return heard
}

// waitToldBack judges a provisional room again once ToldBackWait has
// passed since it opened: the members not connected are no longer waited
// for.
func (m *Manager) waitToldBack(r *room) {
	t := time.NewTimer(toldBackWait())
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return
	case <-t.C:
	}
	r.mu.RLock()
	in := r.prov != nil && r.inToldBackLocked()
	r.mu.RUnlock()
	if !in {
		return
	}
	if m.toldBackReady(r) {
		m.confirmToldBack(r)
		return
	}
	m.askUnheard(r, "")
}

// spokeSinceAdmittedLocked reports whether this node is in the room by its
// own word: a member that spoke since it was (last) admitted. A member
// admitted and silent since (invited back after it left, say, by a node its
// user never answered) is not in for a room told back: that is an invite,
// told by its inviter and gated as one (retellInvites, handleInvite).
// Callers hold r.mu.
func (r *room) spokeSinceAdmittedLocked() bool {
	_, member := r.members[r.m.self]
	return member && !r.awaitsJoin(r.m.self)
}

// isMemberLocked reports whether p is a member node. Callers hold r.mu.
func (r *room) isMemberLocked(p peer.ID) bool {
	_, ok := r.members[p]
	return ok
}

// invitedWhileProvisional records that an invite into the room was taken
// (from a trusted inviter, or accepted by the user) while it is
// provisional: the catch-ups then confirm it once they show this node a
// member, whether or not it spoke since (it joins then).
func (r *room) invitedWhileProvisional() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prov != nil {
		r.prov.invited = true
	}
}

// confirmToldBack makes a provisional room a room like any other: its
// record is written, the API and the agents see it, and it posts (its
// join first, if this node has not spoken since its admission). It
// re-checks, under the room's lock, that this node is in and that enough
// members are heard (the state may have moved since the session that
// judged it); the record is written under the lock too, before the room
// stops being provisional, so no reader sees it confirmed without its
// record, nor provisional again after a failed write.
func (m *Manager) confirmToldBack(r *room) {
	refused := m.refusedUnheard(r)
	m.openMu.Lock()
	if m.room(r.id) != r { // m.mu before r.mu, never under it
		m.openMu.Unlock()
		return
	}
	r.mu.Lock()
	if r.prov == nil || !r.inToldBackLocked() || !r.toldBackReadyLocked(refused) {
		r.mu.Unlock()
		m.openMu.Unlock()
		return
	}
	raw, err := json.Marshal(r.meta)
	if err == nil {
		err = m.cfg.Store.Apply([]schema.Op{{Key: schema.RoomIndex(string(r.id)), Val: raw}}, true)
	}
	if err == nil {
		r.prov = nil
	}
	r.mu.Unlock()
	m.openMu.Unlock()
	if err != nil {
		m.log.Warn("room told back not recorded; still provisional", "room", string(r.id), "err", err)
		return
	}
	m.dropInvite(r.id)
	m.changed(r.id)
	r.ownLearned("members' catch-ups confirmed the room")
	m.log.Info("room told back confirmed by members' catch-ups", "room", string(r.id))
}

// dropToldBack drops a provisional room with nothing written: a catch-up
// found this node out (reason "out": unless a session runs again, or this
// node is in now), or none confirmed it in time ("expired"). The evidence
// each teller sent is not taken from it again while it stays connected.
func (m *Manager) dropToldBack(r *room, reason string) {
	m.openMu.Lock()
	defer m.openMu.Unlock()
	m.mu.Lock()
	r.mu.RLock()
	pv := r.prov
	in := r.inToldBackLocked()
	keep := pv == nil || m.rooms[r.id] != r || reason == "out" && (pv.running > 0 || in || !pv.sawOut)
	var sources map[peer.ID]ID
	if pv != nil {
		sources = pv.sources
	}
	r.mu.RUnlock()
	if keep {
		m.mu.Unlock()
		return
	}
	delete(m.rooms, r.id)
	r.mu.Lock()
	pv.gone = true
	r.mu.Unlock()
	m.mu.Unlock()
	for p, own := range sources {
		m.judged.add(judgedKey{r.id, p, own})
	}
	m.stopRoom(r)
	m.metrics.toldBackDropped.WithLabelValues(reason).Inc()
	m.log.Info("room told back dropped", "room", string(r.id), "reason", reason)
}

// expireToldBack drops r if it is still provisional ProvisionalTTL after it
// opened.
func (m *Manager) expireToldBack(r *room) {
	t := time.NewTimer(ProvisionalTTL)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return
	case <-t.C:
	}
	if r.provisional() {
		m.dropToldBack(r, "expired")
	}
}

// dropInvite forgets a waiting invite to room id (the room is open now).
func (m *Manager) dropInvite(id identity.RoomID) {
	m.invites.mu.Lock()
	defer m.invites.mu.Unlock()
	if _, ok := m.invites.recs[id]; !ok {
		return
	}
	delete(m.invites.recs, id)
	if err := m.cfg.Store.Apply([]schema.Op{{Key: schema.WaitingInvite(string(id)), Delete: true}}, false); err != nil {
		m.log.Warn("waiting invite not dropped from the store", "room", string(id), "err", err)
	}
}

// acceptToldBack takes the user's yes to a room told back by teller, a
// node not trusted to open it (its notice waited, raw): the room opens
// provisionally, or takes teller as one more source if it is open so.
func (m *Manager) acceptToldBack(id identity.RoomID, raw []byte, teller peer.ID) error {
	var n inviteNotice
	if err := frameDec.Unmarshal(raw, &n); err != nil {
		return fmt.Errorf("%w: the notice kept: %v", ErrMalformed, err)
	}
	ev, err := m.checkTellBack(id, n, teller)
	if err != nil {
		return err
	}
	ev.meta.Accepted = true // the user said yes to it
	if err := m.openToldBack(id, ev, teller); err != nil {
		return err
	}
	m.log.Info("room told back accepted", "room", string(id), "remote", teller.String())
	return nil
}
