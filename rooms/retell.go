package rooms

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
// admitted, and is not out) asks P, once per connection, which of those
// rooms it lacks (/parley/held/1: the room IDs; the answer is the ones it
// has not open, or every one when P does not know the asker as a member,
// see handleHeld). For each, the member tells P the room back on
// /parley/invite/1: the notice carries, beside the invite event (the create
// event for the creator), the signed create event and P's own latest event
// in the room. P checks that the create event founds the room, that the
// invite invites P into it, and that the own event is its own, signed by
// its key: it accepted the room once. It then opens the room and catches up
// from the teller; the room learns P's own events (a post waits, as after a
// restart, and a join its admission would post waits for them too: P joined
// already) before P posts again. A told-back room opens only if P's store
// holds no record of it at all (an older copy lacks the record; a record,
// left, removed from or failed to open, is never overwritten by a notice: a
// post of P's that crossed its removal is later than the removal's cutoff,
// and a member that has not learnt the removal holds it), and if the
// catch-up then says P is out, it closes again. A teller the policy does
// not know (a stranger: a co-member the older copy does not know) may ask
// and tell back, and is caught up from; a revoked, denied or expired
// contact may not. Rooms P was invited to and never joined are told again
// by their inviter as before (retellInvites), and wait for the user when
// the inviter is not trusted.

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

// asking holds the peers being asked (a peer's several connections start
// one ask); mu protects peers.
type asking struct {
	mu    sync.Mutex
	peers map[peer.ID]bool
}

func (a *asking) start(p peer.ID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.peers[p] {
		return false
	}
	if a.peers == nil {
		a.peers = make(map[peer.ID]bool)
	}
	a.peers[p] = true
	return true
}

func (a *asking) done(p peer.ID) {
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
		if member && !r.awaitsJoin(p) {
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
	defer m.asking.done(p)
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
			m.log.Debug("asking which rooms a member lacks failed", "remote", p.String(), "err", err)
			return
		}
		for _, id := range lacks {
			r := byID[id]
			if r == nil || m.room(r.id) != r {
				continue // not asked about, told already, or closed since
			}
			// Each room asked about is told once at most, however
			// often the answer names it.
			delete(byID, id)
			if err := m.tellBack(r, p); err != nil {
				m.log.Info("telling a member a room it lacks failed", "room", string(r.id), "remote", p.String(), "err", err)
				continue
			}
			m.log.Info("told a member a room it lacks", "room", string(r.id), "remote", p.String())
		}
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
	switch {
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
		if r := m.room(id); r != nil && r.isMember(remote) {
			continue
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
	if n.Own, err = m.seqWire(r, p, own); err != nil {
		return err
	}
	return sendInviteNotice(m.ctx, m.cfg.Host, p, n)
}

// seqWire returns the signed bytes of author's event seq in room r.
func (m *Manager) seqWire(r *room, author peer.ID, seq uint64) ([]byte, error) {
	idb, ok, err := m.cfg.Store.Lookup(schema.RoomAuthorSeq(string(r.id), []byte(author), seq))
	if err != nil || !ok || len(idb) != len(ID{}) {
		return nil, fmt.Errorf("event %d of %s not stored: %v", seq, author, err)
	}
	return m.storedWire(r, ID(idb))
}

// takeTellBack takes a member's notice of a room this node is in and does
// not hold (see the top of this file), sent by remote.
func (m *Manager) takeTellBack(id identity.RoomID, n inviteNotice, remote peer.ID) error {
	refuse := func(why string, args ...any) error {
		return fmt.Errorf("%w: room %s told back by %s: %s", ErrInviteRefused, id, remote, fmt.Sprintf(why, args...))
	}
	admit, _, err := Decode(n.Event)
	if err != nil {
		return err
	}
	own, _, err := Decode(n.Own)
	if err != nil {
		return err
	}
	if own.Author != m.self || own.Room != id {
		return refuse("the event said to be this node's is not this node's in the room")
	}
	create := admit
	if len(n.Create) > 0 {
		if create, _, err = Decode(n.Create); err != nil {
			return err
		}
	}
	if create.Kind != KindCreate || create.Room != id || len(create.Body) < roomNonceLen || DeriveRoomID(create.Author, create.Body[:roomNonceLen]) != id {
		return refuse("no create event that founds the room")
	}
	if create.Author != m.self {
		if target, err := admit.InviteTarget(); err != nil || target != m.self || admit.Room != id {
			return refuse("no invite of this node into the room")
		}
	}
	name, purpose := splitCreate(create.Body[roomNonceLen:])
	meta := Meta{Name: name, Purpose: purpose, Creator: create.Author, Opened: time.Now().UTC(), Topic: TopicFor(create.Body[:roomNonceLen])}
	if create.Author != m.self {
		meta.InvitedBy = admit.Author
	}
	r, err := m.openToldBack(id, meta)
	if err != nil {
		return err
	}
	m.dropInvite(id)
	r.mu.Lock()
	r.toldBy = remote
	r.mu.Unlock()
	r.beginInviteCatchUp()
	m.log.Info("room told back by a member", "room", string(id), "remote", remote.String())
	m.spawn(func() { m.catchUpToldBack(r, remote) })
	return nil
}

// errHeld refuses a room told back that this node holds a record of: open,
// left, removed from, or failed to open. The notice is for rooms an older
// copy lacks altogether; a record is never overwritten by one (a member
// that has not learnt this node's removal yet may hold an own event of it
// later than the removal: a post that crossed it). The same answer for
// each case tells the sender nothing about which.
var errHeld = fmt.Errorf("%w: this node holds a record of the room", ErrInviteRefused)

// openToldBack opens a room told back, persisting it, unless this node
// holds a record of it. The check and the open are made under openMu, as
// closeRoom takes the room out and records it left under openMu.
func (m *Manager) openToldBack(id identity.RoomID, meta Meta) (*room, error) {
	m.openMu.Lock()
	defer m.openMu.Unlock()
	if m.room(id) != nil || m.leaving.get(id) != nil {
		return nil, errHeld
	}
	if _, ok, err := m.cfg.Store.Lookup(schema.RoomIndex(string(id))); err != nil {
		return nil, err
	} else if ok {
		return nil, errHeld
	}
	return m.openLocked(id, meta, true, true)
}

// toldBackBy reports whether p told this node the room back. A stranger
// that did is caught up from (syncWith): it is a co-member an older copy
// of this node's home does not know, and the room knows it as one once it
// holds the room's events.
func (r *room) toldBackBy(p peer.ID) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return p != "" && r.toldBy == p
}

// catchUpToldBack catches up a room told back with its teller. If the room
// then says this node is out (it was removed, or left, since its own
// event: the teller had not learnt it), the room closes again, recorded
// as left.
func (m *Manager) catchUpToldBack(r *room, teller peer.ID) {
	ctx, cancel := context.WithTimeout(m.ctx, 2*time.Minute)
	defer cancel()
	err := r.syncWith(ctx, teller)
	r.endInviteCatchUp()
	if err != nil {
		m.log.Warn("catch-up of a room told back failed; will retry", "room", string(r.id), "err", err)
		r.requestSync(teller)
		return
	}
	r.mu.RLock()
	_, member := r.members[m.self]
	known := len(r.members) > 0 // the room holds its create event at least
	r.mu.RUnlock()
	if known && !member && m.room(r.id) == r {
		m.log.Info("room told back says this node is out; closing it", "room", string(r.id), "remote", teller.String())
		m.closeRoom(r, false)
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
