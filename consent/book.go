package consent

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// Policy tunes a Book. The zero value means the defaults noted per field.
type Policy struct {
	// MaxPendingIn caps the pending incoming requests of peers this node
	// does not know (default 100). At the cap, a new request (once its
	// signature checks) drops the oldest of them, so strangers with fresh
	// keys cannot fill the book and keep a genuine request out.
	MaxPendingIn int
	// MaxPendingKnown caps the pending incoming requests of peers the node
	// knows (IncomingRequest's known, or a past contact, or a peer this
	// node asked); beyond it they are refused, never dropped (default 100).
	// Strangers cannot take their room.
	MaxPendingKnown int
	// PendingTTL is how long an incoming request waits for an answer; then
	// it is dropped (default 7 days; see Expire).
	PendingTTL time.Duration
	// DenyCooldown is how long a denied or revoked peer may not ask again
	// (default 24h).
	DenyCooldown time.Duration
	// DefaultValidity is a certificate's lifetime when Approve is given none
	// (default 365 days).
	DefaultValidity time.Duration
	// ClockSkew back-dates not_before of certificates this node makes, so a
	// peer whose clock is a little behind can use them at once (default 2m).
	ClockSkew time.Duration
	// Scopes granted by Approve (default DefaultScopes).
	Scopes []string
}

func (p Policy) withDefaults() Policy {
	if p.MaxPendingIn <= 0 {
		p.MaxPendingIn = 100
	}
	if p.MaxPendingKnown <= 0 {
		p.MaxPendingKnown = 100
	}
	if p.PendingTTL <= 0 {
		p.PendingTTL = DefaultPendingTTL
	}
	if p.DenyCooldown <= 0 {
		p.DenyCooldown = 24 * time.Hour
	}
	if p.DefaultValidity <= 0 {
		p.DefaultValidity = 365 * 24 * time.Hour
	}
	if p.ClockSkew <= 0 {
		p.ClockSkew = 2 * time.Minute
	}
	if len(p.Scopes) == 0 {
		p.Scopes = DefaultScopes
	}
	p.Scopes = slices.Compact(slices.Sorted(slices.Values(p.Scopes)))
	return p
}

// DefaultPendingTTL is how long an incoming request waits for an answer
// by default.
const DefaultPendingTTL = 7 * 24 * time.Hour

// Record is one changed contact for the caller to persist: Value is the
// Contact's MarshalBinary encoding, to be stored under the peer's key
// (c/<peer>), or, with Delete set, the key is to be deleted (a request
// from a peer the book knew nothing else of, dropped or expired).
type Record struct {
	Peer   peer.ID
	Value  []byte
	Delete bool
}

// Approval is what the approver sends to the requester: the certificate
// payload and the approver's signature over it (message KindApprove).
type Approval struct {
	ID      string  // the request approved
	Peer    peer.ID // the requester, to send it to
	Payload []byte
	Sig     []byte
}

// Book is one node's contact book: a state machine with no I/O and no
// goroutines; time is passed in. Its methods are safe for concurrent use,
// but a caller that persists the returned records should serialise
// mutating calls together with the writes, so records land in order.
type Book struct {
	self peer.ID
	priv crypto.PrivKey
	pol  Policy

	mu       sync.Mutex // protects contacts
	contacts map[peer.ID]*entry
}

// entry is a contact and its decoded certificate (nil without one).
type entry struct {
	c    Contact
	cert *Certificate
}

// NewBook returns an empty book for the node whose key is priv.
func NewBook(priv crypto.PrivKey, pol Policy) (*Book, error) {
	self, err := identity.PeerID(priv)
	if err != nil {
		return nil, fmt.Errorf("consent: new book: %w", err)
	}
	pol = pol.withDefaults()
	if len(pol.Scopes) > MaxScopes {
		return nil, fmt.Errorf("consent: new book: %w: %d scopes", ErrMalformed, len(pol.Scopes))
	}
	for _, s := range pol.Scopes {
		if err := checkScope(s); err != nil {
			return nil, fmt.Errorf("consent: new book: %w", err)
		}
	}
	return &Book{self: self, priv: priv, pol: pol, contacts: make(map[peer.ID]*entry)}, nil
}

// Self returns the peer ID of the book's node.
func (b *Book) Self() peer.ID { return b.self }

// Load adds stored contact records (values from Record) to the book,
// verifying their certificates. It loads every good record and returns the
// bad ones as one error wrapping ErrBadRecord; the book is usable either way.
func (b *Book) Load(records [][]byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for i, v := range records {
		e, err := b.loadOne(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("consent: load record %d: %w", i, err))
			continue
		}
		b.contacts[e.c.Peer] = e
	}
	return errors.Join(errs...)
}

func (b *Book) loadOne(v []byte) (*entry, error) {
	var c Contact
	if err := c.UnmarshalBinary(v); err != nil {
		return nil, err
	}
	if c.Peer == b.self {
		return nil, fmt.Errorf("%w: contact with self", ErrBadRecord)
	}
	e := &entry{c: c}
	if c.Cert != nil {
		cert, err := decodeCertificate(c.Cert)
		if err != nil {
			return nil, fmt.Errorf("%w: peer %s: %w", ErrBadRecord, c.Peer, err)
		}
		if !cert.Between(b.self, c.Peer) {
			return nil, fmt.Errorf("%w: peer %s: %w", ErrBadRecord, c.Peer, ErrWrongPeers)
		}
		e.cert = cert
		e.c.Expires, e.c.Scopes = cert.NotAfter, cert.Scopes
	} else if c.State == StateActive {
		return nil, fmt.Errorf("%w: peer %s: active without certificate", ErrBadRecord, c.Peer)
	}
	return e, nil
}

// commit stores next (and cert, if not nil) as the contact of next.Peer and
// returns the record to persist. Nothing changes if encoding fails.
func (b *Book) commit(next Contact, cert *Certificate) ([]Record, error) {
	if next.State != StatePendingIn {
		next.PriorState, next.Known = "", false
	}
	if next.State != StateRevoked {
		next.PeerRevocation = nil // it ended a contact that has moved on since
	}
	if next.State != StatePendingIn {
		next.ShownCert = nil // approved, denied or dropped
	}
	if cert != nil {
		next.Expires, next.Scopes = cert.NotAfter, cert.Scopes
	}
	v, err := next.MarshalBinary()
	if err != nil {
		return nil, err
	}
	old := b.contacts[next.Peer]
	e := &entry{c: next, cert: cert}
	if cert == nil && old != nil {
		e.cert = old.cert
	}
	b.contacts[next.Peer] = e
	return []Record{{Peer: next.Peer, Value: v}}, nil
}

// live reports whether e holds a certificate usable at now (or soon: a
// certificate not yet valid counts, it was made for this pair).
func (b *Book) live(e *entry, now time.Time) bool {
	return e != nil && e.c.State == StateActive && e.cert != nil &&
		now.UnixMilli() < e.cert.NotAfter.UnixMilli()
}

// waiting reports whether e is an incoming request waiting for the user:
// pending-in and not yet approved (an approval waits for the requester's
// countersignature, and is the user's answer).
func waiting(e *entry) bool { return e.c.State == StatePendingIn && e.c.Offer == nil }

// expired reports whether e is a waiting request past the TTL.
func (b *Book) expired(e *entry, now time.Time) bool {
	return waiting(e) && !now.Before(e.c.Updated.Add(b.pol.PendingTTL))
}

// pendingIn counts the waiting requests of known peers or of others.
func (b *Book) pendingIn(known bool) int {
	n := 0
	for _, e := range b.contacts {
		if waiting(e) && e.c.Known == known {
			n++
		}
	}
	return n
}

// oldestUnknown returns the waiting request of a peer not known that came
// first, or nil.
func (b *Book) oldestUnknown() *entry {
	var old *entry
	for _, e := range b.contacts {
		if waiting(e) && !e.c.Known && (old == nil || e.c.Updated.Before(old.c.Updated) ||
			(e.c.Updated.Equal(old.c.Updated) && e.c.Peer < old.c.Peer)) {
			old = e
		}
	}
	return old
}

// history reports whether the book knew p before its request: a
// certificate, a revocation either way, or our own request to it. A peer
// cannot make history alone: its revocation is kept only where the book
// had some already, or this node had approved it (see ApplyRevocation).
func history(c *Contact) bool {
	return c.Cert != nil || c.Seq > 0 || c.RevokeSeq > 0 || c.LastRevocationSeq > 0 ||
		c.OutRequest != nil || c.Revocation != nil
}

// priorState is the state a contact goes back to when its incoming request
// is dropped; "" means the contact goes away.
func priorState(c *Contact) State {
	switch {
	case c.PriorState != "":
		return c.PriorState
	case c.OutRequest != nil:
		return StatePendingOut
	case c.Revocation != nil || c.LastRevocationSeq > 0:
		return StateRevoked
	case c.Cert != nil:
		return StateActive
	case history(c):
		return StateDenied
	}
	return ""
}

// dropRequest drops e's waiting request: the contact goes back to what it
// was before the request, or away if it was nothing.
func (b *Book) dropRequest(e *entry, now time.Time) ([]Record, error) {
	prior := priorState(&e.c)
	if prior == "" {
		delete(b.contacts, e.c.Peer)
		return []Record{{Peer: e.c.Peer, Delete: true}}, nil
	}
	next := e.c.clone()
	next.State, next.PriorState, next.Known, next.InRequest, next.Updated = prior, "", false, nil, now
	if prior != StatePendingOut {
		next.Note = ""
	}
	return b.commit(next, nil)
}

// expireLocked drops every waiting request past the TTL.
func (b *Book) expireLocked(now time.Time) ([]Record, error) {
	var recs []Record
	for _, e := range b.contacts {
		if b.expired(e, now) {
			r, err := b.dropRequest(e, now)
			if err != nil {
				return recs, err
			}
			recs = append(recs, r...)
		}
	}
	return recs, nil
}

// Expire drops the incoming requests that waited longer than
// Policy.PendingTTL without an answer, and returns the records to persist.
// A node calls it after Load and now and then (IncomingRequest also does).
func (b *Book) Expire(now time.Time) ([]Record, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	recs, err := b.expireLocked(now)
	if err != nil {
		return recs, fmt.Errorf("consent: expire requests: %w", err)
	}
	return recs, nil
}

// byRequest finds the pending-in contact whose request has ID id and has
// not expired at now.
func (b *Book) byRequest(id string, now time.Time) *entry {
	for _, e := range b.contacts {
		if e.c.State == StatePendingIn && e.c.ID == id && !b.expired(e, now) {
			return e
		}
	}
	return nil
}

// shownSeq returns the seq of the certificate the peer showed back, 0 if
// none.
func shownSeq(c *Contact) uint64 {
	if c.ShownCert == nil {
		return 0
	}
	if cert, err := decodeCertificate(c.ShownCert); err == nil {
		return cert.Seq
	}
	return 0
}

// offerSeq returns the seq of the outstanding offer, 0 if none.
func offerSeq(c *Contact) uint64 {
	if c.Offer == nil {
		return 0
	}
	if cert, err := parseCertPayload(c.Offer); err == nil {
		return cert.Seq
	}
	return 0
}

// nextSeq returns a seq above last that also grows with the clock, so that
// a node which lost its records still issues seqs its peers accept.
func nextSeq(last uint64, now time.Time) uint64 {
	return max(last+1, uint64(max(now.UnixMilli(), 0)))
}

// OutgoingRequest makes a signed request to peer to and records the contact
// as pending-out. handle is our own display name, note our words to them.
// Send wire in a KindRequest message. A new request replaces an earlier
// pending one. It fails with ErrAlreadyContact while a live certificate
// exists, and with ErrState if the peer has asked us (approve that instead).
func (b *Book) OutgoingRequest(to peer.ID, handle, note string, now time.Time) (wire []byte, recs []Record, err error) {
	defer wrap(&err, "request", to)
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[to]
	if b.live(e, now) {
		return nil, nil, ErrAlreadyContact
	}
	if e != nil && e.c.State == StatePendingIn {
		return nil, nil, fmt.Errorf("%w: %s already asked you: approve request %s", ErrState, to, e.c.ID)
	}
	wire, err = NewRequest(b.priv, to, handle, note, now)
	if err != nil {
		return nil, nil, err
	}
	next := Contact{Peer: to}
	if e != nil {
		next = e.c.clone()
	}
	next.ID, next.State, next.Note, next.Updated = RequestID(wire), StatePendingOut, note, now
	next.OutRequest, next.InRequest, next.Offer, next.OfferSig = wire, nil, nil, nil
	next.DeniedUntil = time.Time{}
	recs, err = b.commit(next, nil)
	if err != nil {
		return nil, nil, err
	}
	return wire, recs, nil
}

// IncomingRequest takes a request that arrived from peer from (as
// authenticated by the transport) and records it as pending-in. known says
// the node's user knows from without a contact (a member of a room the
// node is in, of the user's organisation): its request never gives way to
// strangers'. It returns the contact; answer the sender with KindAck. A
// repeat of the same pending request is accepted again with no records.
// Requests past Policy.PendingTTL are dropped first. Errors: ErrDenied
// (cool-down), ErrAlreadyPending, ErrTooManyPending (known peers' cap),
// ErrAlreadyContact, ErrWrongPeers, and decoding errors. A request of a
// peer the node does not know, at the cap, drops the oldest such request
// (its records come back too). If we had asked the peer too, the contact
// becomes pending-in and keeps OutRequest: the node may approve at once.
func (b *Book) IncomingRequest(from peer.ID, wire []byte, known bool, now time.Time) (c Contact, recs []Record, err error) {
	defer wrap(&err, "incoming request", from)
	b.mu.Lock()
	defer b.mu.Unlock()
	recs, err = b.expireLocked(now)
	if err != nil {
		return Contact{}, nil, err
	}
	fail := func(err error) (Contact, []Record, error) { return Contact{}, recs, err }
	e := b.contacts[from]
	// Cheap checks on the authenticated sender first: a flood costs no signature checks.
	if e != nil && (e.c.State == StateDenied || e.c.State == StateRevoked) && now.Before(e.c.DeniedUntil) {
		return fail(fmt.Errorf("%w: until %s", ErrDenied, e.c.DeniedUntil.UTC().Format(time.RFC3339)))
	}
	if e != nil && e.c.State == StatePendingIn {
		if e.c.InRequest != nil && e.c.ID == RequestID(wire) {
			return e.c.clone(), recs, nil
		}
		return fail(fmt.Errorf("%w: request %s", ErrAlreadyPending, e.c.ID))
	}
	if b.live(e, now) {
		return fail(ErrAlreadyContact)
	}
	known = known || (e != nil && history(&e.c))
	if known && b.pendingIn(true) >= b.pol.MaxPendingKnown {
		return fail(fmt.Errorf("%w: %d", ErrTooManyPending, b.pol.MaxPendingKnown))
	}
	req, err := decodeRequest(wire)
	if err != nil {
		return fail(err)
	}
	if req.From != from || req.To != b.self {
		return fail(fmt.Errorf("%w: request from %s to %s", ErrWrongPeers, req.From, req.To))
	}
	if !known && b.pendingIn(false) >= b.pol.MaxPendingIn {
		if old := b.oldestUnknown(); old != nil {
			r, err := b.dropRequest(old, now)
			if err != nil {
				return fail(err)
			}
			recs = append(recs, r...)
		}
	}
	next := Contact{Peer: from}
	if e != nil {
		next = e.c.clone()
		next.PriorState = e.c.State
	}
	next.ID, next.Handle, next.Note, next.State, next.Updated = req.ID, req.Handle, req.Note, StatePendingIn, now
	next.InRequest, next.Offer, next.OfferSig, next.Known = req.Wire, nil, nil, known
	r, err := b.commit(next, nil)
	if err != nil {
		return fail(err)
	}
	return next.clone(), append(recs, r...), nil
}

// Approve grants the pending incoming request id: it makes a certificate
// payload valid for validFor (Policy.DefaultValidity if ≤ 0), signs it and
// returns it to send in a KindApprove message. The contact stays pending-in
// until Complete takes the requester's countersignature. Approving again
// makes a fresh offer (e.g. when the first was lost).
func (b *Book) Approve(id string, validFor time.Duration, now time.Time) (a Approval, recs []Record, err error) {
	return b.ApproveScoped(id, validFor, nil, now)
}

// ApproveScoped is Approve granting scopes (nil: the policy's).
func (b *Book) ApproveScoped(id string, validFor time.Duration, scopes []string, now time.Time) (a Approval, recs []Record, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("consent: approve %s: %w", id, err)
		}
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.byRequest(id, now)
	if e == nil {
		return Approval{}, nil, ErrNotFound
	}
	if e.c.ShownCert != nil {
		return Approval{}, nil, fmt.Errorf("%w: the peer showed back a certificate; only the user takes it back (ApproveShown)", ErrState)
	}
	if validFor <= 0 {
		validFor = b.pol.DefaultValidity
	}
	seq := nextSeq(max(e.c.Seq, offerSeq(&e.c)), now)
	if scopes == nil {
		scopes = b.pol.Scopes
	}
	payload, err := NewCertPayload(b.self, e.c.Peer, scopes, now.Add(-b.pol.ClockSkew), now.Add(validFor), seq)
	if err != nil {
		return Approval{}, nil, err
	}
	sig, err := identity.Sign(b.priv, identity.DomainContactCert, payload)
	if err != nil {
		return Approval{}, nil, err
	}
	next := e.c.clone()
	next.Offer, next.OfferSig, next.Updated = payload, sig, now
	recs, err = b.commit(next, nil)
	if err != nil {
		return Approval{}, nil, err
	}
	return Approval{ID: id, Peer: e.c.Peer, Payload: payload, Sig: sig}, recs, nil
}

// Countersign is the requester's side of an approval from peer from: it
// checks the payload (for us and from, not expired, seq above any
// certificate held) and from's signature, countersigns, stores the sealed
// certificate (the contact becomes active) and returns our signature to send
// back in a KindCountersign message. handle, if not empty, is the approver's
// display name. It also renews a live contact when the seq is higher,
// within bounds (checkRenewal): no wider scopes, no end later than the
// current one or now + Policy.DefaultValidity; an expired contact is not
// renewed without a request (before, any contact stored as active was,
// even long expired, with any scopes and end). Errors: ErrNotRequested, ErrWrongPeers, ErrExpired, ErrReplay,
// ErrBadSignature, ErrMalformed.
func (b *Book) Countersign(from peer.ID, handle string, payload, approverSig []byte, now time.Time) (sig []byte, recs []Record, err error) {
	defer wrap(&err, "countersign", from)
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[from]
	if e == nil || (e.c.OutRequest == nil && (e.c.State != StateActive || e.cert == nil)) {
		return nil, nil, ErrNotRequested
	}
	if e.c.OutRequest == nil && e.c.Approver {
		// Only the approver, who chose the validity, may renew: otherwise
		// the requester could extend its own certificate at will.
		return nil, nil, fmt.Errorf("%w: this node approved the contact; only it may renew", ErrNotRequested)
	}
	cert, err := parseCertPayload(payload)
	if err != nil {
		return nil, nil, err
	}
	if err := cert.Check(b.self, from, now); err != nil {
		// A not_before within ClockSkew is the approver's clock running
		// ahead; anything later is refused.
		if !errors.Is(err, ErrNotYetValid) || cert.NotBefore.Sub(now) > b.pol.ClockSkew {
			return nil, nil, err
		}
	}
	if cert.Seq <= e.c.Seq {
		return nil, nil, fmt.Errorf("%w: certificate seq %d, have %d", ErrReplay, cert.Seq, e.c.Seq)
	}
	if e.c.OutRequest == nil {
		if err := b.checkRenewal(e, cert, now); err != nil {
			return nil, nil, err
		}
	}
	if err := checkSig(approverSig); err != nil {
		return nil, nil, err
	}
	if err := verifyCert(from, payload, approverSig); err != nil {
		return nil, nil, err
	}
	if handle != "" {
		if err := checkText("handle", handle, MaxHandle, false); err != nil {
			return nil, nil, err
		}
	}
	sig, err = identity.Sign(b.priv, identity.DomainContactCert, payload)
	if err != nil {
		return nil, nil, err
	}
	wire, err := AssembleCert(payload, approverSig, sig)
	if err != nil {
		return nil, nil, err
	}
	cert.SigA, cert.SigB = approverSig, sig
	if cert.A == b.self {
		cert.SigA, cert.SigB = sig, approverSig
	}
	next := e.c.clone()
	if handle != "" {
		next.Handle = handle
	}
	next.State, next.Cert, next.Seq, next.Updated = StateActive, wire, cert.Seq, now
	next.OutRequest, next.InRequest, next.Note, next.DeniedUntil = nil, nil, "", time.Time{}
	next.Approver = false
	// An outstanding offer of ours (both approved at once) stays for Complete.
	recs, err = b.commit(next, cert)
	if err != nil {
		return nil, nil, err
	}
	return sig, recs, nil
}

// checkRenewal bounds what Countersign signs with no request of this
// node's user behind it (a renewal by the approver): the contact must still
// be live, the scopes no wider than the current certificate's (and known
// to this node), and not_after no later than the current certificate's or
// now + Policy.DefaultValidity, whichever is later. Anything else needs the
// user: an expired contact is asked for again, and that approval comes
// through the request.
func (b *Book) checkRenewal(e *entry, cert *Certificate, now time.Time) error {
	if !b.live(e, now) {
		return fmt.Errorf("%w: a renewal of a contact no longer live: ask again", ErrNotRequested)
	}
	for _, sc := range cert.Scopes {
		if !slices.Contains(e.cert.Scopes, sc) || !(slices.Contains(DefaultScopes, sc) || slices.Contains(b.pol.Scopes, sc)) {
			return fmt.Errorf("%w: a renewal granting scope %q beyond the current certificate's %v", ErrNotRequested, sc, e.cert.Scopes)
		}
	}
	limit := now.Add(b.pol.DefaultValidity)
	if e.cert.NotAfter.After(limit) {
		limit = e.cert.NotAfter
	}
	if cert.NotAfter.UnixMilli() > limit.UnixMilli() {
		return fmt.Errorf("%w: a renewal until %s, past %s", ErrNotRequested,
			cert.NotAfter.UTC().Format(time.RFC3339), limit.UTC().Format(time.RFC3339))
	}
	return nil
}

// Complete is the approver's last step: sig is the requester's
// countersignature of our outstanding offer. The sealed certificate is
// stored and the contact becomes active. Errors: ErrState (no offer
// outstanding), ErrBadSignature, ErrReplay (a newer certificate is held).
func (b *Book) Complete(from peer.ID, sig []byte, now time.Time) (recs []Record, err error) {
	defer wrap(&err, "complete", from)
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[from]
	if e == nil || e.c.Offer == nil {
		return nil, fmt.Errorf("%w: no approval outstanding", ErrState)
	}
	if err := checkSig(sig); err != nil {
		return nil, err
	}
	wire, err := AssembleCert(e.c.Offer, e.c.OfferSig, sig)
	if err != nil {
		return nil, err
	}
	cert, err := decodeCertificate(wire)
	if err != nil {
		return nil, err
	}
	if cert.Seq < e.c.Seq {
		return nil, fmt.Errorf("%w: certificate seq %d, have %d", ErrReplay, cert.Seq, e.c.Seq)
	}
	next := e.c.clone()
	next.State, next.Cert, next.Seq, next.Updated = StateActive, wire, cert.Seq, now
	next.Offer, next.OfferSig, next.InRequest, next.OutRequest, next.Note = nil, nil, nil, nil, ""
	next.DeniedUntil, next.Approver = time.Time{}, true
	return b.commit(next, cert)
}

// Deny refuses the pending incoming request id: the contact becomes denied
// and the peer may not ask again for Policy.DenyCooldown. Send a KindDeny
// message. After Approve, use Revoke instead (ErrState).
func (b *Book) Deny(id string, now time.Time) (recs []Record, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("consent: deny %s: %w", id, err)
		}
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.byRequest(id, now)
	if e == nil {
		return nil, ErrNotFound
	}
	if e.c.Offer != nil {
		return nil, fmt.Errorf("%w: already approved, revoke instead", ErrState)
	}
	if e.c.ShownCert != nil {
		return nil, fmt.Errorf("%w: the peer holds a certificate this node signed; revoke it instead", ErrState)
	}
	next := e.c.clone()
	next.State, next.DeniedUntil, next.Updated = StateDenied, now.Add(b.pol.DenyCooldown), now
	next.InRequest, next.OutRequest = nil, nil
	return b.commit(next, nil)
}

// Denied records that peer from denied our request id (a KindDeny message).
// Errors: ErrNotFound if id is not our pending request to from.
func (b *Book) Denied(from peer.ID, id string, now time.Time) (recs []Record, err error) {
	defer wrap(&err, "denied", from)
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[from]
	if e == nil || e.c.OutRequest == nil || RequestID(e.c.OutRequest) != id {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	next := e.c.clone()
	next.State, next.Updated = StateDenied, now
	next.InRequest, next.OutRequest, next.Offer, next.OfferSig = nil, nil, nil, nil
	return b.commit(next, nil)
}

// Revoke withdraws consent to peer p: it ends the certificate (and any offer
// outstanding), or cancels a pending request, and returns the signed
// revocation to send in a KindRevoke message; it is also kept in
// Contact.Revocation for redelivery. Allowed fails at once. Unless we were
// only asking them, p may not ask again for Policy.DenyCooldown.
// Errors: ErrNoContact, ErrState (already denied or revoked).
func (b *Book) Revoke(p peer.ID, now time.Time) (wire []byte, recs []Record, err error) {
	defer wrap(&err, "revoke", p)
	return b.revoke(p, true, now)
}

// RevokeAllowingAsk is Revoke without the cool-down: p may ask again at
// once (and its request waits for the user). It is for a revocation that
// is no decision of the user against p: the organisation trust the contact
// came through was withdrawn, or a membership revoked.
func (b *Book) RevokeAllowingAsk(p peer.ID, now time.Time) (wire []byte, recs []Record, err error) {
	defer wrap(&err, "revoke", p)
	return b.revoke(p, false, now)
}

func (b *Book) revoke(p peer.ID, cooldown bool, now time.Time) (wire []byte, recs []Record, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[p]
	if e == nil {
		return nil, nil, ErrNoContact
	}
	if e.c.State == StateDenied || e.c.State == StateRevoked {
		return nil, nil, fmt.Errorf("%w: contact is %s", ErrState, e.c.State)
	}
	certSeq := max(e.c.Seq, offerSeq(&e.c), shownSeq(&e.c))
	seq := nextSeq(e.c.RevokeSeq, now)
	wire, err = NewRevocation(b.priv, p, certSeq, seq, now)
	if err != nil {
		return nil, nil, err
	}
	next := e.c.clone()
	if next.State != StatePendingOut && cooldown {
		next.DeniedUntil = now.Add(b.pol.DenyCooldown)
	}
	next.State, next.Seq, next.RevokeSeq, next.Revocation, next.Updated = StateRevoked, certSeq, seq, wire, now
	next.Offer, next.OfferSig, next.InRequest, next.OutRequest = nil, nil, nil, nil
	recs, err = b.commit(next, nil)
	if err != nil {
		return nil, nil, err
	}
	return wire, recs, nil
}

// ApplyRevocation takes a revocation made by a peer (wire from a KindRevoke
// message; it is signed, so it may come by any path). A revocation whose seq
// is not above the last one seen from its issuer fails with ErrReplay. One
// that covers the current certificate (cert_seq ≥ Contact.Seq) revokes the
// contact, or cancels its pending request; an older one only advances the
// replay counter. It returns the contact. A peer with no history in the
// book (history: never a contact, never asked nor revoked by this node)
// that revokes its own waiting request only withdraws it: the request is
// dropped as an expired one is (the returned contact's State is the state
// it went back to, "" when the entry went away), and nothing of the
// revocation is kept (its LastRevocationSeq stays 0, which an applied
// revocation never leaves). Errors also: ErrWrongPeers (not for us),
// ErrNoContact (unknown issuer, or a denied peer with nothing to revoke),
// decoding errors.
func (b *Book) ApplyRevocation(wire []byte, now time.Time) (c Contact, recs []Record, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("consent: apply revocation: %w", err)
		}
	}()
	rev, err := decodeRevocation(wire)
	if err != nil {
		return Contact{}, nil, err
	}
	if rev.Issuer == b.self {
		return b.restoreRevocation(rev, now)
	}
	if rev.Subject != b.self {
		return Contact{}, nil, fmt.Errorf("%w: revocation of %s", ErrWrongPeers, rev.Subject)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[rev.Issuer]
	if e == nil {
		return Contact{}, nil, fmt.Errorf("%w: %s", ErrNoContact, rev.Issuer)
	}
	if rev.Seq <= e.c.LastRevocationSeq {
		return Contact{}, nil, fmt.Errorf("%w: revocation seq %d, last seen %d", ErrReplay, rev.Seq, e.c.LastRevocationSeq)
	}
	if !history(&e.c) && e.c.ShownCert == nil {
		// A peer the node never dealt with but for its requests: it has
		// nothing to revoke but a request of its own. That request goes
		// as an expired one does (back to denied, or away), and the
		// revocation leaves nothing: no entry, no replay counter, nothing
		// to hand back. Otherwise a fresh key could ask and revoke to stay
		// in the book for good, past the strangers' cap and the TTL, and
		// count as a peer the node knows (history a peer makes alone).
		switch {
		case waiting(e):
			out := e.c.clone()
			recs, err = b.dropRequest(e, now)
			if err != nil {
				return Contact{}, nil, err
			}
			out.State, out.PriorState, out.InRequest, out.Updated = priorState(&e.c), "", nil, now
			return out, recs, nil
		case e.c.State == StateDenied:
			return Contact{}, nil, fmt.Errorf("%w: %s: nothing to revoke", ErrNoContact, rev.Issuer)
		}
	}
	next := e.c.clone()
	next.LastRevocationSeq = rev.Seq
	if rev.CertSeq >= e.c.Seq {
		switch e.c.State {
		case StateActive, StatePendingIn, StatePendingOut:
			next.State, next.Updated = StateRevoked, now
			next.Offer, next.OfferSig, next.InRequest, next.OutRequest = nil, nil, nil, nil
		}
		next.Seq = rev.CertSeq
		next.PeerRevocation = bytes.Clone(wire)
	}
	recs, err = b.commit(next, nil)
	if err != nil {
		return Contact{}, nil, err
	}
	out := next.clone()
	out.State = out.stateAt(now)
	return out, recs, nil
}

// restoreRevocation takes back a revocation this node made, shown to it by
// the peer it revoked: a node started on an older copy of its home forgets
// the revocations it made since, and its peers keep them
// (Contact.PeerRevocation). It is this node's own signed decision, so it is
// applied as Revoke would have: if it is newer than the last revocation the
// book holds for the peer and ends the contact's current certificate (or
// offer). Errors: ErrReplay (the book knows it, or a newer certificate
// followed it), ErrNoContact.
func (b *Book) restoreRevocation(rev *Revocation, now time.Time) (c Contact, recs []Record, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[rev.Subject]
	if e == nil {
		return Contact{}, nil, fmt.Errorf("%w: own revocation of %s", ErrNoContact, rev.Subject)
	}
	if rev.Seq <= e.c.RevokeSeq {
		return Contact{}, nil, fmt.Errorf("%w: own revocation seq %d, last made %d", ErrReplay, rev.Seq, e.c.RevokeSeq)
	}
	if certSeq := max(e.c.Seq, offerSeq(&e.c), shownSeq(&e.c)); rev.CertSeq < certSeq {
		return Contact{}, nil, fmt.Errorf("%w: own revocation of certificate %d, the contact is at %d", ErrReplay, rev.CertSeq, certSeq)
	}
	if e.c.Updated.After(rev.Time) && e.c.ShownCert == nil {
		// The contact changed after the revocation was made (a new
		// request of the user's since the restore): that decision stands.
		// The revocation's seq is taken, so it is not shown back again.
		// (A certificate shown back, waiting, is the peer's change, not
		// the user's: the revocation ends it.)
		next := e.c.clone()
		next.RevokeSeq = rev.Seq
		if recs, err = b.commit(next, nil); err != nil {
			return Contact{}, nil, err
		}
		return Contact{}, recs, fmt.Errorf("%w: own revocation made %s, before the contact's last change (%s)",
			ErrReplay, rev.Time.UTC().Format(time.RFC3339), e.c.Updated.UTC().Format(time.RFC3339))
	}
	next := e.c.clone()
	if until := rev.Time.Add(b.pol.DenyCooldown); next.State != StatePendingOut && until.After(next.DeniedUntil) {
		next.DeniedUntil = until
	}
	next.State, next.Seq, next.RevokeSeq, next.Revocation, next.Updated = StateRevoked, rev.CertSeq, rev.Seq, rev.Wire, now
	next.Offer, next.OfferSig, next.InRequest, next.OutRequest, next.ShownCert = nil, nil, nil, nil, nil
	if recs, err = b.commit(next, nil); err != nil {
		return Contact{}, nil, err
	}
	out := next.clone()
	out.State = out.stateAt(now)
	return out, recs, nil
}

// RestoreCertificate takes a certificate between this node and from, shown
// to it by from (wire, sealed; handle, from's display name if given): a
// node started on an older copy of its home forgets the contacts made and
// renewed since, and its peers keep them. It carries this node's own
// signature, but a peer this node revoked since the copy could show it and
// keep the revocation to itself, so it is not taken on trust: if both
// signatures hold, it is valid now (a not_before within ClockSkew counts),
// its seq is above every certificate and revocation the book holds for
// from, and the book's contact has not changed since it began, the contact
// becomes pending-in with the certificate (Contact.ShownCert) for the user
// to approve (it is active again, this node its approver) or deny. Only a
// certificate that completes the offer the book holds (its countersignature
// was lost) is taken at once: the book's latest decision. restored reports
// that it became active; a certificate the book holds, or holds pending
// already, changes nothing. Errors: ErrReplay, ErrWrongPeers, ErrExpired,
// ErrNotYetValid, ErrBadSignature, ErrAlreadyPending, ErrTooManyPending.
func (b *Book) RestoreCertificate(from peer.ID, handle string, wire []byte, now time.Time) (c Contact, restored bool, recs []Record, err error) {
	defer wrap(&err, "restore certificate", from)
	if from == b.self {
		return Contact{}, false, nil, fmt.Errorf("%w: a certificate with self", ErrWrongPeers)
	}
	if handle != "" {
		if err := checkText("handle", handle, MaxHandle, false); err != nil {
			return Contact{}, false, nil, err
		}
	}
	// The cheap checks first, the signatures last: a flood of shows costs
	// a parse each.
	cert, w, err := parseCertUnverified(wire)
	if err != nil {
		return Contact{}, false, nil, err
	}
	if err := b.checkShown(cert, from, now); err != nil {
		return Contact{}, false, nil, err
	}
	b.mu.Lock()
	held, _, err := b.shownDecision(from, wire, cert, now)
	b.mu.Unlock()
	if err != nil || held {
		return b.contactOf(from, now), false, nil, err
	}
	if err := verifyCert(cert.A, w.Payload, w.SigA); err != nil {
		return Contact{}, false, nil, err
	}
	if err := verifyCert(cert.B, w.Payload, w.SigB); err != nil {
		return Contact{}, false, nil, err
	}
	cert.SigA, cert.SigB = w.SigA, w.SigB
	b.mu.Lock()
	defer b.mu.Unlock()
	held, completes, err := b.shownDecision(from, wire, cert, now) // again: the book may have moved
	if err != nil || held {
		return Contact{}, false, nil, err
	}
	next := Contact{Peer: from, Handle: handle}
	e := b.contacts[from]
	if e != nil {
		next = e.c.clone()
		if handle != "" {
			next.Handle = handle
		}
	}
	if completes {
		next = activated(next, wire, cert, now)
		if recs, err = b.commit(next, cert); err != nil {
			return Contact{}, false, nil, err
		}
		out := next.clone()
		out.State = out.stateAt(now)
		return out, true, recs, nil
	}
	if b.pendingIn(true) >= b.pol.MaxPendingKnown {
		return Contact{}, false, nil, fmt.Errorf("%w: %d", ErrTooManyPending, b.pol.MaxPendingKnown)
	}
	if e != nil {
		next.PriorState = e.c.State
	}
	next.ID, next.State, next.Updated, next.Known = RequestID(wire), StatePendingIn, now, true
	next.ShownCert, next.InRequest, next.Offer, next.OfferSig = bytes.Clone(wire), nil, nil, nil
	next.Note = fmt.Sprintf("shows a certificate this node signed (from %s, seq %d) that this home does not hold: restored from an older copy? approve to be contacts again",
		cert.NotBefore.UTC().Format(time.RFC3339), cert.Seq)
	if recs, err = b.commit(next, nil); err != nil {
		return Contact{}, false, nil, err
	}
	return next.clone(), false, recs, nil
}

// shownDecision decides, from the book alone, on a certificate from shows
// back: held when the book holds it already (as its certificate, or
// pending); completes when it completes the book's outstanding offer;
// an error when it is refused. Its caller holds b.mu.
func (b *Book) shownDecision(from peer.ID, wire []byte, cert *Certificate, now time.Time) (held, completes bool, err error) {
	e := b.contacts[from]
	if e == nil {
		return false, false, nil
	}
	if bytes.Equal(e.c.Cert, wire) || bytes.Equal(e.c.ShownCert, wire) {
		return true, false, nil
	}
	completes = e.c.Offer != nil && cert.Seq == offerSeq(&e.c)
	switch {
	case cert.Seq <= e.c.Seq || (e.c.Offer != nil && cert.Seq < offerSeq(&e.c)):
		return false, false, fmt.Errorf("%w: certificate seq %d, have %d", ErrReplay, cert.Seq, max(e.c.Seq, offerSeq(&e.c)))
	case completes:
		return false, true, nil
	case (e.c.State == StateDenied || e.c.State == StateRevoked) && now.Before(e.c.DeniedUntil):
		return false, false, fmt.Errorf("%w: until %s", ErrDenied, e.c.DeniedUntil.UTC().Format(time.RFC3339))
	case e.c.Updated.UnixMilli() > cert.NotBefore.Add(b.pol.ClockSkew).UnixMilli():
		return false, false, fmt.Errorf("%w: the contact changed at %s, after the certificate began (%s)",
			ErrReplay, e.c.Updated.UTC().Format(time.RFC3339), cert.NotBefore.UTC().Format(time.RFC3339))
	case e.c.State == StatePendingIn:
		return false, false, fmt.Errorf("%w: request %s", ErrAlreadyPending, e.c.ID)
	case e.c.State == StateActive && b.live(e, now):
		// A live contact stays as it is (the newer certificate is shown
		// again later, and waits for the user once this one has ended).
		return false, false, fmt.Errorf("%w: the contact's certificate is live", ErrAlreadyContact)
	}
	return false, false, nil
}

// contactOf returns the contact with p as of now (zero if none).
func (b *Book) contactOf(p peer.ID, now time.Time) Contact {
	c, _ := b.Get(p, now)
	return c
}

// checkShown checks a certificate shown back by from: between this node
// and from, valid at now (a not_before within ClockSkew counts).
func (b *Book) checkShown(cert *Certificate, from peer.ID, now time.Time) error {
	if err := cert.Check(b.self, from, now); err != nil {
		if !errors.Is(err, ErrNotYetValid) || cert.NotBefore.Sub(now) > b.pol.ClockSkew {
			return err
		}
	}
	return nil
}

// ApproveShown makes the certificate that the peer of pending-in request
// id showed back (Contact.ShownCert) active again, as it was (validity and
// scopes are the certificate's; this node counts as its approver): the
// user's approval, which no policy gives in its place. Errors: ErrNotFound,
// ErrState (no certificate shown), and the certificate's checks.
func (b *Book) ApproveShown(id string, now time.Time) (recs []Record, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("consent: approve shown %s: %w", id, err)
		}
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.byRequest(id, now)
	switch {
	case e == nil:
		return nil, ErrNotFound
	case e.c.ShownCert == nil:
		return nil, fmt.Errorf("%w: no certificate shown back", ErrState)
	}
	cert, err := decodeCertificate(e.c.ShownCert)
	if err != nil {
		return nil, err
	}
	if err := b.checkShown(cert, e.c.Peer, now); err != nil {
		return nil, err
	}
	if cert.Seq <= e.c.Seq {
		return nil, fmt.Errorf("%w: certificate seq %d, have %d", ErrReplay, cert.Seq, e.c.Seq)
	}
	return b.commit(activated(e.c.clone(), e.c.ShownCert, cert, now), cert)
}

// activated returns next made active with the sealed certificate wire
// (cert, decoded), this node its approver: a certificate shown back and
// taken.
func activated(next Contact, wire []byte, cert *Certificate, now time.Time) Contact {
	next.State, next.Cert, next.Seq, next.Updated = StateActive, bytes.Clone(wire), cert.Seq, now
	next.Offer, next.OfferSig, next.InRequest, next.OutRequest, next.Note = nil, nil, nil, nil, ""
	next.DeniedUntil, next.Approver = time.Time{}, true
	next.Expires, next.Scopes = cert.NotAfter, cert.Scopes
	return next
}

// Allowed returns nil if there is a live certificate between this node and
// p at now (always for p == Self: a node's own agents need no consent). It
// is the check before invites, direct asks, presence and accepting events.
// Errors: ErrNoContact, ErrRevoked, ErrExpired, ErrNotYetValid.
func (b *Book) Allowed(p peer.ID, now time.Time) error {
	if p == b.self {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[p]
	switch {
	case e == nil:
		return fmt.Errorf("consent: allowed %s: %w", p, ErrNoContact)
	case e.c.State == StateRevoked:
		return fmt.Errorf("consent: allowed %s: %w", p, ErrRevoked)
	case e.c.State != StateActive || e.cert == nil:
		return fmt.Errorf("consent: allowed %s: %w: contact is %s", p, ErrNoContact, e.c.State)
	}
	if err := e.cert.Check(b.self, p, now); err != nil {
		return fmt.Errorf("consent: allowed %s: %w", p, err)
	}
	return nil
}

// State returns the state of the contact with p as of now, and false if
// there is none. It is Get without the copy, for checks on every message.
func (b *Book) State(p peer.ID, now time.Time) (State, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[p]
	if e == nil {
		return "", false
	}
	return e.c.stateAt(now), true
}

// Get returns the contact with p, its State as of now.
func (b *Book) Get(p peer.ID, now time.Time) (Contact, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.contacts[p]
	if e == nil {
		return Contact{}, false
	}
	c := e.c.clone()
	c.State = c.stateAt(now)
	return c, true
}

var stateOrder = map[State]int{
	StatePendingIn: 0, StatePendingOut: 1, StateActive: 2, StateExpired: 3, StateDenied: 4, StateRevoked: 5,
}

// List returns all contacts with their State as of now, sorted by state
// (pending-in, pending-out, active, expired, denied, revoked), then handle,
// then peer ID.
func (b *Book) List(now time.Time) []Contact {
	b.mu.Lock()
	out := make([]Contact, 0, len(b.contacts))
	for _, e := range b.contacts {
		c := e.c.clone()
		c.State = c.stateAt(now)
		out = append(out, c)
	}
	b.mu.Unlock()
	slices.SortFunc(out, func(x, y Contact) int {
		return cmp.Or(
			cmp.Compare(stateOrder[x.State], stateOrder[y.State]),
			cmp.Compare(x.Handle, y.Handle),
			cmp.Compare(x.Peer, y.Peer),
		)
	})
	return out
}

// wrap prefixes *err with the operation and peer, in house style.
func wrap(err *error, op string, p peer.ID) {
	if *err != nil {
		*err = fmt.Errorf("consent: %s %s: %w", op, p, *err)
	}
}
