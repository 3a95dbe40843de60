package rooms

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Bounds of the invites that wait for the user's answer.
const (
	// MaxInvitesPerInviter is how many invites of one node may wait.
	MaxInvitesPerInviter = 8
	// MaxInvites is how many invites may wait in all.
	MaxInvites = 64
	// InviteTTL is how long an invite waits (and a declined one is
	// remembered) before it is dropped.
	InviteTTL = 14 * 24 * time.Hour
)

// MaxRoomsPerInviter is how many open rooms one trusted node's invites
// may have opened without the user: its invites past that wait for the
// user's answer like an untrusted node's. Each open room holds memory and
// a subscription, and is opened again at every start.
var MaxRoomsPerInviter atomic.Int32

func init() { MaxRoomsPerInviter.Store(100) }

// roomsOpenedBy counts the open rooms p's invites opened, and the rooms
// its invites opened without the user that this node was then removed
// from: their records (the room's index and events) are kept for good, so
// a trusted node that invited this node and removed it, again and again,
// would grow its disk (and recovery.json's room list) without bound while
// never holding more than MaxRoomsPerInviter rooms open. A room this node
// left by itself, or one its user accepted, does not count.
func (m *Manager) roomsOpenedBy(p peer.ID) int {
	m.mu.RLock()
	rs := make([]*room, 0, len(m.rooms))
	for _, r := range m.rooms {
		rs = append(rs, r)
	}
	m.mu.RUnlock()
	n := 0
	for _, r := range rs {
		r.mu.RLock()
		if r.meta.InvitedBy == p {
			n++
		}
		r.mu.RUnlock()
	}
	err := m.cfg.Store.ScanFrom(schema.RoomIndexPrefix(), nil, false, func(_, v []byte) bool {
		var meta Meta
		if json.Unmarshal(v, &meta) == nil && meta.Left && meta.LeftAt.IsZero() && !meta.Accepted && meta.InvitedBy == p {
			n++
		}
		return true
	})
	if err != nil {
		m.log.Warn("rooms opened by an inviter not counted", "remote", p.String(), "err", err)
	}
	return n
}

// InviteGate is an optional part of a Policy: it says whose invites open a
// room at once. An invite from a node the Policy allows but the gate does
// not trust (a co-member of another room who is not a contact) waits for
// the user's answer (Manager.Invites, AcceptInvite, DeclineInvite). A
// Policy without it trusts every invite it allows.
type InviteGate interface {
	TrustInvite(p peer.ID) bool
}

// WaitingInvite is an invite waiting for the user's answer.
type WaitingInvite struct {
	Room    identity.RoomID
	Name    string // the room's name as the inviter gave it (a hint)
	Inviter peer.ID
	At      time.Time // when it came
	Expires time.Time
	// ToldBack is set for a room told back to this node (its home was
	// put back from an older copy) by a node not trusted to open it: the
	// inviter says this node is in the room, and proves it took part.
	ToldBack bool
}

// inviteRec is a waiting invite as stored at w/<room>.
type inviteRec struct {
	Name     string    `json:"name,omitempty"`
	Inviter  string    `json:"inviter"`
	Topic    string    `json:"topic,omitempty"`
	At       time.Time `json:"at"`
	Declined bool      `json:"declined,omitempty"`
	// ToldBack is the notice of a room told back (retell.go) by a node
	// not trusted to open it, as it came: accepting it opens the room
	// provisionally, as a trusted teller's notice does.
	ToldBack []byte `json:"told_back,omitempty"`
}

// invitesBook holds the waiting and declined invites; mu protects recs.
type invitesBook struct {
	mu   sync.Mutex
	recs map[identity.RoomID]inviteRec
}

// trustsInvite reports whether an invite from p opens the room at once.
func (m *Manager) trustsInvite(p peer.ID) bool {
	g, ok := m.cfg.Policy.(InviteGate)
	return !ok || g.TrustInvite(p)
}

// InviteWaits reports whether this node's invite of target waits on
// target's node for its user's answer instead of opening the room there at
// once: target is not a contact whose certificate grants invites (the
// InviteGate; certificates grant the same scopes to both sides).
func (m *Manager) InviteWaits(target peer.ID) bool {
	return target != m.self && !m.trustsInvite(target)
}

// loadInvites reads the waiting invites, dropping the expired and the
// unreadable ones.
func (m *Manager) loadInvites() error {
	recs := make(map[identity.RoomID]inviteRec)
	var drop []schema.Op
	now := time.Now()
	err := m.cfg.Store.ScanFrom(schema.WaitingInvitePrefix(), nil, false, func(k, v []byte) bool {
		id, err := identity.ParseRoomID(string(k[len(schema.WaitingInvitePrefix()):]))
		var rec inviteRec
		if err == nil {
			err = json.Unmarshal(v, &rec)
		}
		if err == nil {
			_, err = peer.Decode(rec.Inviter)
		}
		if err != nil || now.Sub(rec.At) > InviteTTL {
			drop = append(drop, schema.Op{Key: append([]byte(nil), k...), Delete: true})
			return true
		}
		rec.Name = cleanLine(rec.Name, MaxName) // held before invites' names were checked
		recs[id] = rec
		return true
	})
	if err != nil {
		return fmt.Errorf("rooms: load invites: %w", err)
	}
	if len(drop) > 0 {
		if err := m.cfg.Store.Apply(drop, false); err != nil {
			return fmt.Errorf("rooms: drop expired invites: %w", err)
		}
	}
	m.invites.mu.Lock()
	m.invites.recs = recs
	m.invites.mu.Unlock()
	return nil
}

// expireInvitesLocked drops invites past InviteTTL. Callers hold invites.mu.
func (m *Manager) expireInvitesLocked(now time.Time) {
	var drop []schema.Op
	for id, rec := range m.invites.recs {
		if now.Sub(rec.At) > InviteTTL {
			delete(m.invites.recs, id)
			drop = append(drop, schema.Op{Key: schema.WaitingInvite(string(id)), Delete: true})
		}
	}
	if len(drop) > 0 {
		if err := m.cfg.Store.Apply(drop, false); err != nil {
			m.log.Warn("expired invites not dropped from the store", "err", err)
		}
	}
}

// holdInvite keeps an invite from inviter for the user's answer, within
// the bounds; an invite already waiting is kept as it is.
func (m *Manager) holdInvite(id identity.RoomID, rec inviteRec) error {
	m.invites.mu.Lock()
	defer m.invites.mu.Unlock()
	now := time.Now()
	m.expireInvitesLocked(now)
	if old, ok := m.invites.recs[id]; ok {
		if old.Declined {
			m.metrics.invitesRefused.Inc()
			return fmt.Errorf("%w: the user declined the invite to room %s", ErrInviteRefused, id)
		}
		return nil
	}
	waiting, from := 0, 0
	for _, other := range m.invites.recs {
		if other.Declined {
			continue
		}
		waiting++
		if other.Inviter == rec.Inviter {
			from++
		}
	}
	switch {
	case from >= MaxInvitesPerInviter || waiting >= MaxInvites:
		m.metrics.invitesRefused.Inc()
	}
	switch {
	case from >= MaxInvitesPerInviter:
		return fmt.Errorf("%w: %d invites from %s already wait for the user's answer", ErrInviteRefused, from, rec.Inviter)
	case waiting >= MaxInvites:
		return fmt.Errorf("%w: %d invites already wait for the user's answer", ErrInviteRefused, waiting)
	}
	rec.At = now.UTC()
	raw, err := json.Marshal(rec)
	if err == nil {
		err = m.cfg.Store.Apply([]schema.Op{{Key: schema.WaitingInvite(string(id)), Val: raw}}, false)
	}
	if err != nil {
		return fmt.Errorf("rooms: keep invite to %s: %w", id, err)
	}
	m.invites.recs[id] = rec
	m.metrics.invitesHeld.Inc()
	return nil
}

// Invites lists the invites waiting for the user's answer, oldest first.
func (m *Manager) Invites() []WaitingInvite {
	m.invites.mu.Lock()
	defer m.invites.mu.Unlock()
	m.expireInvitesLocked(time.Now())
	out := make([]WaitingInvite, 0, len(m.invites.recs))
	for id, rec := range m.invites.recs {
		if rec.Declined {
			continue
		}
		p, _ := peer.Decode(rec.Inviter)
		out = append(out, WaitingInvite{Room: id, Name: rec.Name, Inviter: p, At: rec.At, Expires: rec.At.Add(InviteTTL), ToldBack: len(rec.ToldBack) > 0})
	}
	slices.SortFunc(out, func(a, b WaitingInvite) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(string(a.Room), string(b.Room))
	})
	return out
}

// takeInvite removes the waiting invite to room id (a unique prefix of the
// ID will do) and returns it.
func (m *Manager) takeInvite(ref string, decline bool) (identity.RoomID, inviteRec, error) {
	m.invites.mu.Lock()
	defer m.invites.mu.Unlock()
	m.expireInvitesLocked(time.Now())
	ref = strings.TrimSpace(ref)
	var found []identity.RoomID
	for id, rec := range m.invites.recs {
		if !rec.Declined && ref != "" && strings.HasPrefix(string(id), ref) {
			found = append(found, id)
		}
	}
	switch {
	case len(found) == 0:
		return "", inviteRec{}, fmt.Errorf("%w: no invite waits for room %q (see `parley invites`)", ErrUnknownRoom, ref)
	case len(found) > 1:
		return "", inviteRec{}, fmt.Errorf("%w: %q names %d waiting invites; give more of the room ID", ErrMalformed, ref, len(found))
	}
	id := found[0]
	rec := m.invites.recs[id]
	op := schema.Op{Key: schema.WaitingInvite(string(id)), Delete: true}
	if decline {
		d := rec
		d.Declined = true
		raw, err := json.Marshal(d)
		if err != nil {
			return "", inviteRec{}, err
		}
		op = schema.Op{Key: schema.WaitingInvite(string(id)), Val: raw}
	}
	if err := m.cfg.Store.Apply([]schema.Op{op}, false); err != nil {
		return "", inviteRec{}, fmt.Errorf("rooms: answer invite to %s: %w", id, err)
	}
	if decline {
		rec.Declined = true
		m.invites.recs[id] = rec
	} else {
		delete(m.invites.recs, id)
	}
	return id, rec, nil
}

// AcceptInvite accepts a waiting invite (by room ID, or a unique prefix of
// it): the node opens the room and catches up with the inviter, and joins
// once its invite event is stored.
func (m *Manager) AcceptInvite(ref string) (identity.RoomID, error) {
	id, rec, err := m.takeInvite(ref, false)
	if err != nil {
		return "", err
	}
	inviter, _ := peer.Decode(rec.Inviter)
	if len(rec.ToldBack) > 0 {
		return id, m.acceptToldBack(id, rec.ToldBack, inviter)
	}
	r, err := m.open(id, m.reopenMeta(id, Meta{Name: rec.Name, InvitedBy: inviter, Opened: time.Now().UTC(), Topic: rec.Topic, Accepted: true}), true)
	if err != nil {
		return "", err
	}
	r.invitedWhileProvisional()
	m.log.Info("invite accepted", "room", string(id), "remote", rec.Inviter)
	m.spawn(func() { m.joinAfterInvite(r, inviter) })
	return id, nil
}

// DeclineInvite declines a waiting invite: it is remembered (and the
// inviter's invites to that room refused) until InviteTTL after it came.
func (m *Manager) DeclineInvite(ref string) (identity.RoomID, error) {
	id, _, err := m.takeInvite(ref, true)
	return id, err
}
