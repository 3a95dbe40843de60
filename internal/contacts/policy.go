package contacts

import (
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/rooms"
)

var (
	_ rooms.Policy     = (*Service)(nil)
	_ rooms.InviteGate = (*Service)(nil)
)

// TrustInvite reports whether an invite from p opens a room at once: p is
// a contact whose live certificate grants invites. An invite from another
// node this policy allows (a co-member of a room) waits for the user.
// Certificates carry the same scopes on both sides, so it also says
// whether this node's invite of p opens the room there at once.
func (s *Service) TrustInvite(p peer.ID) bool { return p == s.self || s.contactInvite(p) == nil }

// Allowed returns nil if p may talk to this node: p is this node, holds a
// live certificate, or is a member of a room this node is in — unless p's
// contact is revoked, expired or denied (see the package documentation).
// Rooms ask it for invites, event authors, gossip senders and sync
// partners; presence and direct asks should ask it too.
func (s *Service) Allowed(p peer.ID) error {
	if p == s.self {
		return nil
	}
	now := s.now()
	if err := s.cutOff(p, now); err != nil {
		return err
	}
	if st, ok := s.book.State(p, now); ok && st == consent.StateActive && s.book.Allowed(p, now) == nil {
		return nil
	}
	if s.cfg.SharesRoom != nil && s.cfg.SharesRoom(p) {
		return nil
	}
	return fmt.Errorf("contacts: %s is not a contact of this node: %w (%w)", p, consent.ErrNoContact, rooms.ErrStranger)
}

// CutOff reports whether this node's user cut p off: revoked its contact
// (a revocation by the peer alone does not count), or denied its request
// (a denial of this node's request by the peer does not count either: the
// peer's node refuses this one, and this user chose nothing). Rooms do not
// count such a node as vouching for the members it invited
// (rooms.Manager.SharesRoom); a node the peer cut off still takes the
// peer's invitees, as their own inviter's word.
func (s *Service) CutOff(p peer.ID) bool {
	c, ok := s.book.Get(p, s.now())
	c.State = standing(c)
	return ok && (deniedHere(c) || c.RevokedHere())
}

// deniedHere reports whether c stands denied by this node's user: a denial
// sets the cool-down before the peer may ask again (DeniedUntil), the
// peer's denial of this node's request none.
func deniedHere(c consent.Contact) bool {
	return c.State == consent.StateDenied && !c.DeniedUntil.IsZero()
}

// standing is the state c stands in for rooms: a request waiting for the
// user keeps the state it came from, so a node that was cut off (revoked,
// denied, its certificate ended) stays so while it asks again. Before, its
// own request let it back into every room it shared with this node.
func standing(c consent.Contact) consent.State {
	if c.State != consent.StatePendingIn {
		return c.State
	}
	switch c.PriorState {
	case consent.StateRevoked, consent.StateDenied:
		return c.PriorState
	case consent.StateActive:
		return consent.StateExpired // a live contact is never pending-in
	}
	return c.State
}

// cutOff is the error for a node this user cut off, or nil.
func (s *Service) cutOff(p peer.ID, now time.Time) error {
	st, ok := s.book.State(p, now)
	if !ok {
		return nil
	}
	if st == consent.StatePendingIn || st == consent.StateDenied {
		// (the whole record only here: Allowed runs for every event)
		c, _ := s.book.Get(p, now)
		c.State = standing(c)
		if st = c.State; st == consent.StateDenied && !deniedHere(c) {
			return nil // it declined this node's request
		}
	}
	switch st {
	case consent.StateRevoked:
		return fmt.Errorf("contacts: %s: %w", p, consent.ErrRevoked)
	case consent.StateExpired:
		return fmt.Errorf("contacts: %s: %w", p, consent.ErrExpired)
	case consent.StateDenied:
		return fmt.Errorf("contacts: %s: %w", p, consent.ErrDenied)
	}
	return nil
}

// CanInvite returns nil if this node holds a live certificate with target:
// one that grants the invite scope (the invite opens the room there at
// once), or one that does not (the invite waits on target's node for its
// user's answer, rooms.InviteGate). A co-member that is no contact is not
// invited: members take a member's invitee on its inviter's word (Allowed,
// SharesRoom), and that word is worth something only where the inviter
// holds the invitee's consent. Otherwise the error wraps
// rooms.ErrInviteRefused and says how to get consent.
func (s *Service) CanInvite(target peer.ID) error {
	if target == s.self {
		return nil
	}
	err := s.contactInvite(target)
	if err == nil {
		return nil
	}
	now := s.now()
	if st, ok := s.book.State(target, now); ok && st == consent.StateActive && s.book.Allowed(target, now) == nil {
		return nil // a contact without the invite scope: the invite waits
	}
	return err
}

// contactInvite returns nil if this node holds a live certificate with
// target that grants the invite scope, or the error that says how to get
// consent.
func (s *Service) contactInvite(target peer.ID) error {
	now := s.now()
	c, ok := s.book.Get(target, now)
	ask := fmt.Sprintf("ask first with `parley contact request %s`, and try again once it approves", target)
	var why string
	switch {
	case !ok:
		why = "is not a contact of this node"
	case c.State == consent.StatePendingIn:
		why = "asked to be a contact and is waiting for you"
		ask = fmt.Sprintf("approve it with `parley contact approve %s` (or ask it with `parley contact request %s`)", c.ID, target)
	case c.State == consent.StatePendingOut:
		why = "has not approved your contact request yet"
		ask = fmt.Sprintf("wait for its approval (or ask again with `parley contact request %s`)", target)
	case c.State == consent.StateActive:
		if err := s.book.Allowed(target, now); err != nil {
			why = fmt.Sprintf("is a contact whose certificate cannot be used now (%v)", err)
		} else if !slices.Contains(c.Scopes, consent.ScopeInvite) {
			why = "is a contact whose certificate does not grant invites"
		} else {
			return nil
		}
	case c.State == consent.StateDenied && !c.DeniedUntil.IsZero():
		why = "is not a contact (you denied its contact request)"
		ask = fmt.Sprintf("if you changed your mind, ask it with `parley contact request %s`, and try again once it approves", target)
	case c.State == consent.StateDenied:
		// It denied ours: its node refuses another from this one for a
		// while (consent.Policy.DenyCooldown, 24 h by default).
		why = "is not a contact (it denied your contact request)"
		ask = "its node refuses another request from you for a while (24 h by default): ask its user to send you a contact request instead, and approve it"
	default:
		why = fmt.Sprintf("is no longer a contact (%s)", c.State)
	}
	return fmt.Errorf("%w: %s %s: %s", rooms.ErrInviteRefused, target, why, ask)
}
