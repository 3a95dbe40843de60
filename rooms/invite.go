package rooms

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/frame"
)

// ProtocolInvite is the stream protocol that tells a node it was invited.
const ProtocolInvite protocol.ID = "/parley/invite/1"

// maxInviteFrame caps an invite notice (up to three events, as a room told
// back carries, plus a room name); maxPlainInviteFrame caps one that tells
// no room back (an event plus a room name).
const (
	maxInviteFrame      = 3*MaxWire + 1024
	maxPlainInviteFrame = MaxWire + 1024
)

// inviteNotice is what an inviter sends on /parley/invite/1: the room, its
// name (a hint until the create event arrives), the signed invite event,
// and the room's GossipSub topic (also a hint: the create event decides).
// The room's creator sends a node it removed the room and the leave event
// alone (see takeRemoval). A member that tells a node back a room it is in
// and lacks (retell.go) adds the create event (unless Event is it) and the
// node's own latest event in the room.
type inviteNotice struct {
	Room   string `cbor:"1,keyasint"`
	Name   string `cbor:"2,keyasint,omitempty"`
	Event  []byte `cbor:"3,keyasint"`
	Topic  string `cbor:"4,keyasint,omitempty"`
	Create []byte `cbor:"5,keyasint,omitempty"`
	Own    []byte `cbor:"6,keyasint,omitempty"`
}

// inviteAnswer is the invitee's reply.
type inviteAnswer struct {
	OK    bool   `cbor:"1,keyasint,omitempty"`
	Error string `cbor:"2,keyasint,omitempty"`
}

func writeCBORFrame(w io.Writer, v any) error {
	b, err := encMode.Marshal(v)
	if err != nil {
		return err
	}
	return frame.Write(w, b)
}

func readCBORFrame(r io.Reader, max int, v any) error {
	b, err := readFrame(r, max)
	if err != nil {
		return err
	}
	if err := frameDec.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}

// Invite admits target into the room: it records a signed invite event,
// then tells target, which opens the room and catches up. If target cannot
// be told now, it is told again when it next connects.
func (m *Manager) Invite(ctx context.Context, id identity.RoomID, target peer.ID, agent identity.AgentName) (ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return ID{}, err
	}
	if target == m.self {
		return ID{}, fmt.Errorf("%w: this node is already in room %s", ErrInviteRefused, id)
	}
	if err := m.cfg.Policy.CanInvite(target); err != nil {
		return ID{}, err
	}
	r.mu.RLock()
	eid, already := r.members[target]
	spoke := already && !r.awaitsJoin(target) && r.committed[target] > 0
	r.mu.RUnlock()
	if spoke {
		// A member that spoke since its admission is in by its own word:
		// invited again, it is asked whether it holds the room and, if it
		// lacks it (its home put back on an older copy), told it back.
		return eid, m.remindMember(r, target)
	}
	if !already {
		eid, err = r.say(ctx, &sayReq{agent: agent, kind: KindInvite, body: []byte(target)})
		if err != nil {
			return ID{}, fmt.Errorf("rooms: invite %s to %s: %w", target, id, err)
		}
	}
	if err := m.tellInvited(ctx, r, target, eid); err != nil {
		if errors.Is(err, ErrInviteRefused) {
			return eid, fmt.Errorf("rooms: %s is invited to %s, but its node refused the notice: %w", target, id, err)
		}
		return eid, fmt.Errorf("rooms: %s is invited to %s but could not be told yet (it will be when it connects): %w (%w)", target, id, ErrNotToldYet, err)
	}
	return eid, nil
}

// remindMember asks target, a member of r that spoke in it, whether it
// holds r, and tells it r back if it lacks it.
func (m *Manager) remindMember(r *room, target peer.ID) error {
	lacks, err := m.askHeld(target, heldAsk{Rooms: []string{string(r.id)}})
	if err != nil {
		return fmt.Errorf("rooms: %s is a member of %s; asking whether its node holds the room failed (members tell it when it connects): %w", target, r.id, err)
	}
	if !slices.Contains(lacks, string(r.id)) {
		return nil
	}
	if err := m.tellBack(r, target); err != nil {
		return fmt.Errorf("rooms: %s is a member of %s that lacks the room; telling it back failed: %w", target, r.id, err)
	}
	return nil
}

// tellRemoved sends target, removed from the room by event eid, the notice
// of it: the leave event alone, on the invite protocol.
func (m *Manager) tellRemoved(ctx context.Context, r *room, target peer.ID, eid ID) error {
	wire, err := m.storedWire(r, eid)
	if err != nil {
		return err
	}
	return sendInviteNotice(ctx, m.cfg.Host, target, inviteNotice{Room: string(r.id), Event: wire})
}

// takeRemoval takes the notice of this node's removal from room id: a leave
// event that takes this node out, signed by the room's creator, which sent
// it. The room then syncs with the creator, which serves it up to the
// removal, so the removal is stored and checked as any event is.
func (m *Manager) takeRemoval(id identity.RoomID, e *Event, remote peer.ID) error {
	target, _, err := e.LeaveTarget()
	if err != nil {
		return err
	}
	if target != m.self || e.Author != remote || e.Room != id {
		return fmt.Errorf("%w: the leave event is not %s removing this node from %s", ErrInviteRefused, remote, id)
	}
	r := m.room(id)
	if r == nil {
		return fmt.Errorf("%w: no room %s here", ErrUnknownRoom, id)
	}
	r.mu.RLock()
	creator := r.meta.Creator
	r.mu.RUnlock()
	if creator != remote {
		return fmt.Errorf("%w: %s did not create room %s, and only its creator removes", ErrInviteRefused, remote, id)
	}
	if _, out := m.LeftRoom(id); out {
		return nil // known already (a notice sent again)
	}
	// A sync like any other: repeated notices merge into one, and it ends
	// with the room.
	r.requestSync(remote)
	return nil
}

// storedWire returns the signed bytes of a stored event of room r.
func (m *Manager) storedWire(r *room, eid ID) ([]byte, error) {
	v, ok, err := m.cfg.Store.Lookup(storedKey(r.id, eid))
	if err != nil || !ok {
		return nil, fmt.Errorf("event %s not stored: %v", eid, err)
	}
	_, wire, err := splitStored(v)
	return wire, err
}

// tellInvited sends target the notice of its invite event eid.
func (m *Manager) tellInvited(ctx context.Context, r *room, target peer.ID, eid ID) error {
	wire, err := m.storedWire(r, eid)
	if err != nil {
		return err
	}
	r.mu.RLock()
	name, topic := r.meta.Name, r.meta.Topic
	r.mu.RUnlock()
	if CheckName(name) != nil {
		// Clean but blank (a room named under earlier rules, or by a node
		// of another build): the invitee would refuse it, and the create
		// event names the room anyway.
		name = ""
	}
	return sendInviteNotice(ctx, m.cfg.Host, target, inviteNotice{Room: string(r.id), Name: name, Event: wire, Topic: topic})
}

// sendInviteNotice sends target an invite notice and reads its answer.
func sendInviteNotice(ctx context.Context, h host.Host, target peer.ID, n inviteNotice) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s, err := h.NewStream(network.WithAllowLimitedConn(ctx, "invite"), target, ProtocolInvite)
	if err != nil {
		return err
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(20 * time.Second))
	if err := writeCBORFrame(s, n); err != nil {
		s.Reset()
		return err
	}
	_ = s.CloseWrite()
	var ans inviteAnswer
	if err := readCBORFrame(s, 4096, &ans); err != nil {
		s.Reset()
		return err
	}
	if !ans.OK {
		return fmt.Errorf("%w by %s: %s", ErrInviteRefused, target, refusal(ans.Error))
	}
	return nil
}

// refusal is an invitee's answer as the inviter's error gives it: without
// its own "invite refused" (the error says so already), and quoted (%q)
// if it holds anything that does not print as it is on one line (a line
// break, a control or format character, a quote): the words are the
// invitee's, and reach the inviting agent's tool result.
func refusal(why string) string {
	why = strings.TrimPrefix(why, ErrInviteRefused.Error()+": ")
	if q := strconv.Quote(why); q[1:len(q)-1] != why {
		return q
	}
	return why
}

// handleInvite serves /parley/invite/1 on the invitee.
func (m *Manager) handleInvite(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(20 * time.Second))
	remote := s.Conn().RemotePeer()
	answer := func(err error) {
		a := inviteAnswer{OK: err == nil}
		if err != nil {
			a.Error = err.Error()
			m.refusedLogs.Log(m.log, slog.LevelInfo, "invite refused", "remote", remote.String(), "err", err)
		}
		_ = writeCBORFrame(s, a)
	}
	// A peer the policy refuses is answered before its notice is read;
	// what it sends is then drained (up to a notice, for a second) so that
	// closing the stream does not reset it before it reads the answer. A
	// stranger's notice is read: it may tell this node back a room it is
	// in (a co-member an older copy of this node's home does not know),
	// which this node's own event in it proves; any other is refused.
	policy := m.cfg.Policy.Allowed(remote)
	if err := policy; err != nil && !errors.Is(err, ErrStranger) {
		answer(err)
		_ = s.CloseWrite()
		_ = s.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = io.Copy(io.Discard, io.LimitReader(s, maxInviteFrame))
		return
	}
	var n inviteNotice
	b, err := readFrame(s, maxInviteFrame)
	if err == nil {
		if err = frameDec.Unmarshal(b, &n); err != nil {
			err = fmt.Errorf("%w: %v", ErrMalformed, err)
		} else if len(n.Own) == 0 && len(b) > maxPlainInviteFrame {
			err = fmt.Errorf("%w: an invite notice of %d bytes", ErrTooLarge, len(b))
		}
	}
	if err != nil {
		answer(err)
		return
	}
	id, err := identity.ParseRoomID(n.Room)
	if err != nil {
		answer(err)
		return
	}
	if len(n.Own) > 0 {
		answer(m.takeTellBack(id, n, remote))
		return
	}
	if policy != nil {
		answer(policy)
		return
	}
	e, _, err := Decode(n.Event)
	if err != nil {
		answer(err)
		return
	}
	if e.Kind == KindLeave {
		answer(m.takeRemoval(id, e, remote))
		return
	}
	target, err := e.InviteTarget()
	switch {
	case err != nil:
		answer(err)
		return
	case target != m.self || e.Author != remote || e.Room != id:
		answer(fmt.Errorf("%w: the invite event is not %s inviting this node to %s", ErrInviteRefused, remote, id))
		return
	}
	open := m.room(id)
	if open != nil && open.provisional() {
		open = nil // told back and not confirmed: the invite is taken as if the room were not open
	}
	if r := open; r != nil && r.refusesInviter(remote, m.trustsInvite(remote)) {
		// This node is in the room and the sender is not a member of it
		// (perhaps removed): it would be caught up from, and told this
		// node's version vector, for nothing.
		answer(fmt.Errorf("%w: %s is not a member of room %s", ErrInviteRefused, remote, id))
		return
	}
	// The name the notice gives (shown until the create event comes) is
	// refused if CreateRoom has refused it since 2026-12-01 (blank, over
	// MaxName bytes, not UTF-8, control characters): a node of a version
	// since sends its room's name clean. Format characters and line
	// separators, which CreateRoom took until 2026-12-05 and a node of an
	// earlier version still sends, are cleaned away, as the create
	// event's name will be.
	name := n.Name
	if name != "" {
		if err := checkName(name, unicode.IsControl); err != nil {
			answer(fmt.Errorf("%w: %w", ErrInviteRefused, err))
			return
		}
		if name = cleanLine(name, MaxName); strings.TrimSpace(name) == "" {
			name = ""
		}
	}
	topic := n.Topic
	if !validTopic(topic) {
		topic = "" // the room joins its topic when the create event comes
	}
	if open == nil && (!m.trustsInvite(remote) || m.roomsOpenedBy(remote) >= int(MaxRoomsPerInviter.Load())) {
		// Not a contact (a co-member of another room), or a contact whose
		// invites opened MaxRoomsPerInviter rooms already: the invite
		// waits for the user, and opens nothing until accepted.
		if err := m.holdInvite(id, inviteRec{Name: name, Inviter: remote.String(), Topic: topic}); err != nil {
			answer(err)
			return
		}
		answer(nil)
		m.log.Info("invite waits for the user", "room", string(id), "remote", remote.String())
		m.pulse()
		return
	}
	r, err := m.open(id, m.reopenMeta(id, Meta{Name: name, InvitedBy: remote, Opened: time.Now().UTC(), Topic: topic}), true)
	if err != nil {
		answer(err)
		return
	}
	r.invitedWhileProvisional()
	r.beginInviteCatchUp() // before the answer: a post may follow it at once
	answer(nil)
	m.log.Info("invited to room", "room", string(id), "remote", remote.String())
	m.spawn(func() { m.joinAfterInvite(r, remote) }) // not run once closing: the room closes too
}

// joinAfterInvite catches up with the inviter; the room posts
// this node's join as soon as its invite is stored, by whatever path.
// A catch-up that fails before the invite is stored (the inviter too
// slow to answer, busy, or its connection gone for a moment) is asked
// again, after inviteRetryFirst doubled each time up to inviteRetryMax,
// for up to two minutes: the room's own catch-ups would not (a silent
// peer is backed off from, and anti-entropy may be far off), and until
// the invite is stored this node is not in the room its user accepted.
func (m *Manager) joinAfterInvite(r *room, inviter peer.ID) {
	defer r.endInviteCatchUp()
	ctx, cancel := context.WithTimeout(m.ctx, 2*time.Minute)
	defer cancel()
	wait := inviteRetryFirst
	for {
		err := r.syncWith(ctx, inviter)
		if err == nil || r.isMember(m.self) {
			return
		}
		m.log.Warn("catch-up after invite failed; will retry", "room", string(r.id), "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			r.requestSync(inviter)
			return
		case <-r.closed():
			t.Stop()
			return
		}
		wait = min(2*wait, inviteRetryMax)
	}
}

// The waits between catch-ups with an inviter before the invite is stored.
const (
	inviteRetryFirst = time.Second
	inviteRetryMax   = 16 * time.Second
)

// retellInvites tells p again of rooms it was invited to but never spoke
// in (it was offline, or the notice was lost): when p connects, and when
// it starts serving the invite protocol (it connected while its rooms were
// starting, and refused the notice then).
func (m *Manager) retellInvites(p peer.ID) {
	m.mu.RLock()
	var todo []*room
	for _, r := range m.rooms {
		r.mu.RLock()
		_, member := r.members[p]
		silent := r.awaitsJoin(p) && r.prov == nil
		r.mu.RUnlock()
		if member && silent {
			todo = append(todo, r)
		}
	}
	m.mu.RUnlock()
	for _, r := range todo {
		r.mu.RLock()
		eid := r.members[p]
		r.mu.RUnlock()
		if err := m.tellInvited(m.ctx, r, p, eid); err != nil {
			m.log.Debug("re-telling invite failed", "room", string(r.id), "remote", p.String(), "err", err)
		}
	}
}

// An agent of a node invited back after it left is out until the batch
// that stores the invite posts the node's join, and the catch-up with the
// inviter may bring the room's history in batches before it. A post by
// that agent meanwhile waits for the catch-up (Manager.Say) instead of
// being refused as if nobody had invited the node back.

// inviteCatchUpWait bounds how long a post waits for such a catch-up; the
// catch-up itself may take up to two minutes with an inviter that does
// not answer.
const inviteCatchUpWait = 10 * time.Second

// awaitOwnInvite lets a post in a room this node opened on an invite wait
// (inviteCatchUpWait at most) for the catch-up with the inviter to store
// the invite: the node is a member from then on, and the catch-up may bring
// the room's history first, which its agents can see and answer at once.
// It returns at once when the node is a member, or no such catch-up runs.
func (r *room) awaitOwnInvite(ctx context.Context) error {
	if r.isMember(r.m.self) {
		return nil
	}
	return r.waitInviteCatchUp(ctx, func() error {
		return fmt.Errorf("%w: this node is not (yet) a member of room %s: it was invited and is still catching up with its inviter (which may be offline); retry later", ErrNotMember, r.id)
	})
}

// waitInviteCatchUp waits up to inviteCatchUpWait for the catch-ups after
// an invite to end; when that wait runs out (and ctx has not ended) it
// returns late's error.
func (r *room) waitInviteCatchUp(ctx context.Context, late func() error) error {
	wctx, cancel := context.WithTimeout(ctx, inviteCatchUpWait)
	defer cancel()
	err := r.awaitInviteCatchUp(wctx)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return late()
	}
	return err
}

// beginInviteCatchUp records that a catch-up after an invite starts.
func (r *room) beginInviteCatchUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.invCatchUps == 0 {
		r.invCaughtUp = make(chan struct{})
	}
	r.invCatchUps++
}

// endInviteCatchUp records that one ended.
func (r *room) endInviteCatchUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.invCatchUps--
	if r.invCatchUps == 0 {
		close(r.invCaughtUp)
		r.invCaughtUp = nil
	}
}

// awaitInviteCatchUp waits until no catch-up after an invite runs, ctx
// ends or the room closes.
func (r *room) awaitInviteCatchUp(ctx context.Context) error {
	r.mu.RLock()
	ch := r.invCaughtUp
	r.mu.RUnlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.ctx.Done():
		return ErrClosed
	}
}
