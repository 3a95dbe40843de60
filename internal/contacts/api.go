package contacts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/audit"
)

// Entry is one contact as the local API and `parley contact list` show it.
type Entry struct {
	ID      string        `json:"id"`      // the request that made or last changed the contact
	PeerID  peer.ID       `json:"peer_id"` // the other node
	Handle  string        `json:"handle"`  // its display name
	State   consent.State `json:"state"`   // pending-in, pending-out, active, denied, revoked, expired
	Note    string        `json:"note"`    // the pending request's note
	Expires *time.Time    `json:"expires"` // the certificate's end, null without one
	Scopes  []string      `json:"scopes"`  // what the certificate grants (ask, invite, presence), null without one
}

func entryOf(c consent.Contact) Entry {
	e := Entry{ID: c.ID, PeerID: c.Peer, Handle: c.Handle, State: c.State, Note: c.Note}
	if c.Cert != nil && !c.Expires.IsZero() && (c.State == consent.StateActive || c.State == consent.StateExpired) {
		t := c.Expires.UTC()
		e.Expires = &t
		e.Scopes = slices.Clone(c.Scopes)
	}
	return e
}

// Result is the outcome of Request, Approve, Deny or Revoke: the contact
// afterwards, whether the peer got the message, and what happens next.
type Result struct {
	Entry
	Delivered bool   `json:"delivered"`
	Detail    string `json:"detail,omitempty"`
}

func (s *Service) result(p peer.ID) Result {
	c, _ := s.book.Get(p, s.now())
	if c.Peer == "" {
		c.Peer = p
	}
	return Result{Entry: entryOf(c)}
}

// List returns every contact, pending requests first.
func (s *Service) List() []Entry {
	cs := s.book.List(s.now())
	out := make([]Entry, len(cs))
	for i, c := range cs {
		out[i] = entryOf(c)
	}
	return out
}

// Request asks target to become a contact, with note (at most
// consent.MaxNote characters) in the user's words. The target is dialled
// at its given addresses, else the known ones, else found through the DHT;
// if it cannot be reached nothing is stored. Asking again while a request
// is pending sends the same request again.
func (s *Service) Request(ctx context.Context, target peer.AddrInfo, note string) (res Result, err error) {
	p := target.ID
	defer wrapOp(&err, "request", p.String())
	if p == s.self {
		return Result{}, fmt.Errorf("%w: that is this node's own peer ID", ErrBadInput)
	}
	// Check the note and the peer ID before dialling; a bad one stores nothing.
	if _, err := consent.NewRequest(s.cfg.Key, p, s.cfg.Handle, note, s.now()); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	unlock, err := s.lockPeer(ctx, p)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	if c, ok := s.book.Get(p, s.now()); ok {
		switch c.State {
		case consent.StateActive:
			return Result{}, fmt.Errorf("%w until %s", consent.ErrAlreadyContact, c.Expires.UTC().Format(time.RFC3339))
		case consent.StatePendingIn:
			return Result{}, alreadyAsked(p, c.ID)
		}
	}
	if err := s.reach(ctx, target); err != nil {
		// The address hint is for a request that gave none.
		if len(target.Addrs) > 0 {
			if errors.Is(err, errOtherNode) {
				return Result{}, err
			}
			return Result{}, fmt.Errorf("%w (is its node running at the address given?)", err)
		}
		return Result{}, fmt.Errorf("%w (is its node running, and is the peer ID the one its `parley id` prints? give its address: `parley contact request /ip4/…/tcp/…/p2p/%s`)", err, p)
	}
	var wire []byte
	again := false
	if c, ok := s.book.Get(p, s.now()); ok && c.State == consent.StatePendingOut && c.OutRequest != nil {
		wire, again = c.OutRequest, true
	} else {
		err = s.apply(func(now time.Time) (recs []consent.Record, err error) {
			wire, recs, err = s.book.OutgoingRequest(p, s.cfg.Handle, note, now)
			return recs, err
		})
		if c, ok := s.book.Get(p, s.now()); ok && c.State == consent.StatePendingIn && errors.Is(err, consent.ErrState) {
			return Result{}, alreadyAsked(p, c.ID) // its request came meanwhile
		}
		if err != nil {
			return Result{}, err
		}
		s.record(HumanActor, audit.ContactRequest, p, noteDetail(note))
	}
	s.userDecided(p)
	w := work{kind: consent.KindRequest, key: deliveryKey(consent.KindRequest, wire),
		msg: consent.Message{Kind: consent.KindRequest, Request: wire}}
	err = s.deliver(ctx, p, w)
	res = s.result(p)
	switch {
	case err == nil:
		res.Delivered = true
		res.Detail = "asked; the contact becomes active when they approve (at once where their node trusts your organisation)"
		if res.State == consent.StateActive {
			res.Detail = "active: approved at once (their node trusts your organisation)"
		}
		if again {
			res.Detail = "already asked: the same request was sent again (its note is kept); waiting for their approval"
		}
	case errors.Is(err, ErrUnreachable):
		res.Detail = fmt.Sprintf("%s did not answer; the request is kept and sent again when it connects", p)
		return res, nil
	default:
		return res, err
	}
	return res, nil
}

// resolve finds the contact named by ref: a request ID, or a peer ID.
func (s *Service) resolve(ref string) (consent.Contact, error) {
	ref = strings.TrimSpace(ref)
	now := s.now()
	for _, c := range s.book.List(now) {
		if c.ID == ref {
			return c, nil
		}
	}
	if p, err := peer.Decode(ref); err == nil {
		if c, ok := s.book.Get(p, now); ok {
			return c, nil
		}
		return consent.Contact{}, fmt.Errorf("%w: no contact with %s (see `parley contact list`)", ErrUnknown, p)
	}
	return consent.Contact{}, fmt.Errorf("%w: %q is neither a request ID, a peer ID nor a name of a contact or requester (see `parley contact list`)", ErrUnknown, ref)
}

func pendingIn(c consent.Contact, verb string) error {
	if c.State == consent.StatePendingOut && verb != "approve" {
		return plain(consent.ErrState, "this node asked %s for contact: no request of theirs waits here to %s; `parley contact revoke %s` withdraws yours", c.Peer, verb, c.ID)
	}
	if c.State == consent.StatePendingOut {
		// The request is this node's own: it waits on the other node.
		return plain(consent.ErrState, "this node asked %s for contact: its user approves it on their node (`parley contact approve %s` there); until then `parley contact list` shows it pending-out (`parley contact revoke %s` withdraws it)", c.Peer, c.ID, c.ID)
	}
	if c.State != consent.StatePendingIn {
		return plain(consent.ErrState, "there is no request from %s to %s: the contact is %s", c.Peer, verb, c.State)
	}
	return nil
}

// alreadyAsked is the error of a request to p while p's request id waits
// for the user.
func alreadyAsked(p peer.ID, id string) error {
	return plain(consent.ErrState, "%s already asked you for contact: approve its request with `parley contact approve %s`", p, id)
}

// Approve grants the pending request ref (its ID, or the requester's peer
// ID): it signs a certificate valid for validFor (zero: the book's default,
// a year) and sends it to the requester, whose countersignature makes the
// contact active on both sides. If the requester is offline the approval is
// kept and sent when it connects.
func (s *Service) Approve(ctx context.Context, ref string, validFor time.Duration) (res Result, err error) {
	return s.approve(ctx, ref, validFor, nil, HumanActor)
}

// approve is Approve granting scopes (nil: the book's), decided by actor.
func (s *Service) approve(ctx context.Context, ref string, validFor time.Duration, scopes []string, actor string) (res Result, err error) {
	defer wrapOp(&err, "approve", ref)
	if validFor < 0 {
		return Result{}, fmt.Errorf("%w: negative validity", ErrBadInput)
	}
	c, err := s.resolve(ref)
	if err != nil {
		return Result{}, err
	}
	if err := pendingIn(c, "approve"); err != nil {
		return Result{}, err
	}
	if c.ShownCert != nil && actor != HumanActor {
		return Result{}, fmt.Errorf("%w: %s showed back a certificate this node signed: only the user takes it back", consent.ErrState, c.Peer)
	}
	ctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	unlock, err := s.lockPeer(ctx, c.Peer)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	if c.ShownCert != nil {
		if err := s.apply(func(now time.Time) ([]consent.Record, error) { return s.book.ApproveShown(c.ID, now) }); err != nil {
			return Result{}, err
		}
		s.record(actor, audit.ContactApprove, c.Peer, map[string]string{"id": c.ID, "restored": "the certificate it showed back"})
		s.userDecided(c.Peer)
		res = s.result(c.Peer)
		res.Delivered = true
		res.Detail = "approved; the certificate it showed back is active again (the peer holds it already)"
		return res, nil
	}
	var a consent.Approval
	err = s.apply(func(now time.Time) (recs []consent.Record, err error) {
		a, recs, err = s.book.ApproveScoped(c.ID, validFor, scopes, now)
		return recs, err
	})
	if err != nil {
		return Result{}, err
	}
	s.record(actor, audit.ContactApprove, c.Peer, validity(c.ID, validFor))
	if actor == HumanActor {
		s.userDecided(c.Peer)
	}
	w := work{kind: consent.KindApprove, key: deliveryKey(consent.KindApprove, a.Payload), msg: consent.Message{
		Kind: consent.KindApprove, ID: a.ID, Payload: a.Payload, Sig: a.Sig, Handle: s.cfg.Handle,
	}}
	err = s.deliver(ctx, c.Peer, w)
	res = s.result(c.Peer)
	switch {
	case err == nil:
		res.Delivered = true
		res.Detail = "approved; both nodes hold the certificate"
	case errors.Is(err, ErrUnreachable):
		res.Detail = fmt.Sprintf("approved; %s did not answer: the contact becomes active when it connects and countersigns", c.Peer)
		return res, nil
	default:
		return res, err
	}
	return res, nil
}

// Deny refuses the pending request ref (its ID, or the requester's peer
// ID). The requester may not ask again for the book's cool-down (a day). It
// is told if it can be reached; otherwise it learns on its next request.
func (s *Service) Deny(ctx context.Context, ref string) (res Result, err error) {
	defer wrapOp(&err, "deny", ref)
	c, err := s.resolve(ref)
	if err != nil {
		return Result{}, err
	}
	if err := pendingIn(c, "deny"); err != nil {
		return Result{}, err
	}
	if c.ShownCert != nil {
		// The peer holds a certificate this node signed: it is revoked,
		// so that the peer stops counting on it too.
		return s.RevokeBy(ctx, ref, HumanActor)
	}
	ctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	unlock, err := s.lockPeer(ctx, c.Peer)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	if err := s.apply(func(now time.Time) ([]consent.Record, error) { return s.book.Deny(c.ID, now) }); err != nil {
		return Result{}, err
	}
	s.record(HumanActor, audit.ContactDeny, c.Peer, map[string]string{"id": c.ID})
	_, err = s.exchange(ctx, c.Peer, consent.Message{Kind: consent.KindDeny, ID: c.ID})
	res = s.result(c.Peer)
	res.Delivered = err == nil
	res.Detail = "denied; it may not ask again for a while"
	if err != nil {
		res.Detail += fmt.Sprintf(" (not told now: %v; it learns when it asks again)", err)
	}
	return res, nil
}

// Revoke withdraws consent to the contact ref (its peer ID, or a request
// ID): the certificate stops working here at once, a signed revocation is
// sent (and kept, and sent again when the peer connects, if it is offline),
// and the peer may not ask again for the book's cool-down. Revoking a
// pending request of our own cancels it.
func (s *Service) Revoke(ctx context.Context, ref string) (res Result, err error) {
	return s.RevokeBy(ctx, ref, HumanActor)
}

// RevokeBy is Revoke decided by actor, as the audit log names it ("org":
// the contact's organisation trust was withdrawn or its membership
// revoked). Only the user's own revocation (HumanActor) holds the peer's
// new requests off for the cool-down; after another actor's, the peer may
// ask again at once, and its request waits for the user.
func (s *Service) RevokeBy(ctx context.Context, ref, actor string) (res Result, err error) {
	defer wrapOp(&err, "revoke", ref)
	c, err := s.resolve(ref)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	unlock, err := s.lockPeer(ctx, c.Peer)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	var wire []byte
	err = s.apply(func(now time.Time) (recs []consent.Record, err error) {
		if actor == HumanActor {
			wire, recs, err = s.book.Revoke(c.Peer, now)
		} else {
			// Not the user's decision against the peer: it may ask again.
			wire, recs, err = s.book.RevokeAllowingAsk(c.Peer, now)
		}
		return recs, err
	})
	if errors.Is(err, consent.ErrState) {
		// Revoked or denied already: nothing to do, said plainly.
		if cur, ok := s.book.Get(c.Peer, s.now()); ok {
			switch cur.State {
			case consent.StateRevoked:
				return Result{}, plain(err, "the contact with %s is already revoked: nothing to do", c.Peer)
			case consent.StateDenied:
				return Result{}, plain(err, "the request of %s is already denied: there is no contact to revoke", c.Peer)
			}
		}
	}
	if err != nil {
		return Result{}, err
	}
	s.log.Info("contact revoked", "peer", c.Peer.String())
	s.record(actor, audit.ContactRevoke, c.Peer, map[string]string{"was": string(c.State)})
	if actor == HumanActor {
		s.userDecided(c.Peer)
	}
	w := work{kind: consent.KindRevoke, key: deliveryKey(consent.KindRevoke, wire),
		msg: consent.Message{Kind: consent.KindRevoke, Revocation: wire}}
	err = s.deliver(ctx, c.Peer, w)
	res = s.result(c.Peer)
	switch {
	case err == nil:
		res.Delivered = true
		res.Detail = "revoked on both nodes"
	case errors.Is(err, ErrUnreachable):
		res.Detail = fmt.Sprintf("revoked here at once; %s is told when it connects", c.Peer)
	default:
		res.Detail = fmt.Sprintf("revoked here at once; %s refused the notice: %v", c.Peer, err)
	}
	return res, nil
}

func (s *Service) userDecided(p peer.ID) {
	if s.cfg.UserDecided != nil {
		s.cfg.UserDecided(p)
	}
}

// HumanActor is the actor of the decisions the user makes through the local
// API (the command line and the dashboard).
const HumanActor = "human"

// validity is the audit detail of an approval.
func validity(id string, validFor time.Duration) map[string]string {
	d := map[string]string{"id": id}
	if validFor > 0 {
		d["valid_for"] = validFor.String()
	}
	return d
}

// noteDetail is the audit detail of a request's note.
func noteDetail(note string) map[string]string {
	if note == "" {
		return nil
	}
	return map[string]string{"note": note}
}

// ParseTarget reads a contact target: a peer ID, or a multiaddr ending in
// /p2p/PEER_ID, or several of one node's separated by commas (the ready
// line's addrs=, as --bootstrap takes it).
func ParseTarget(s string) (peer.AddrInfo, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "/") && strings.Contains(s, ",") {
		var all peer.AddrInfo
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			ai, err := ParseTarget(part)
			if err != nil {
				return peer.AddrInfo{}, err
			}
			if len(ai.Addrs) == 0 {
				return peer.AddrInfo{}, fmt.Errorf("contacts: %w: %q in a list of addresses is no multiaddr ending in /p2p/PEER_ID", ErrBadInput, part)
			}
			if all.ID != "" && ai.ID != all.ID {
				return peer.AddrInfo{}, fmt.Errorf("contacts: %w: the addresses name two nodes, %s and %s: give one node's", ErrBadInput, all.ID, ai.ID)
			}
			all.ID = ai.ID
			all.Addrs = append(all.Addrs, ai.Addrs...)
		}
		return all, nil
	}
	if strings.HasPrefix(s, "/") {
		m, err := ma.NewMultiaddr(s)
		if err != nil {
			return peer.AddrInfo{}, fmt.Errorf("contacts: %w: %q is not a multiaddr: %v (example: /ip4/192.0.2.1/tcp/4190/p2p/12D3KooW...)", ErrBadInput, s, err)
		}
		ai, err := peer.AddrInfoFromP2pAddr(m)
		if err != nil {
			return peer.AddrInfo{}, fmt.Errorf("contacts: %w: %s has no /p2p/PEER_ID part: %v", ErrBadInput, s, err)
		}
		return *ai, nil
	}
	id, err := peer.Decode(s)
	if err != nil {
		return peer.AddrInfo{}, fmt.Errorf("contacts: %w: %q is neither a peer ID nor a multiaddr ending in /p2p/PEER_ID", ErrBadInput, s)
	}
	return peer.AddrInfo{ID: id}, nil
}

// MaxValidity is the longest validity ParseExpires accepts.
const MaxValidity = 100 * 365 * 24 * time.Hour

// ParseExpires reads a certificate validity: a Go duration ("36h",
// "90m") or a number of days ("90d", "1.5d"). Empty means zero (the
// default). It must be at least a second and at most MaxValidity.
func ParseExpires(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("contacts: %w: expires %q: %s (use days like 90d, or a duration like 36h)", ErrBadInput, s, why)
	}
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, bad("not a number of days")
		}
		if f*24*float64(time.Hour) > float64(MaxValidity) {
			return 0, bad("more than 100 years")
		}
		d = time.Duration(f * 24 * float64(time.Hour))
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, bad("not a duration")
		}
	}
	switch {
	case d < time.Second:
		return 0, bad("at least 1s")
	case d > MaxValidity:
		return 0, bad("more than 100 years")
	}
	return d, nil
}
