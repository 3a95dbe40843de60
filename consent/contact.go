package consent

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// State is where a contact stands, seen from this node.
type State string

// The states of a contact.
const (
	// StatePendingIn: the peer asked us; Approve or Deny it.
	StatePendingIn State = "pending-in"
	// StatePendingOut: we asked the peer and wait for its answer.
	StatePendingOut State = "pending-out"
	// StateActive: both signed a certificate that is not past not_after.
	StateActive State = "active"
	// StateDenied: a request was denied, by us (DeniedUntil is set) or by the peer.
	StateDenied State = "denied"
	// StateRevoked: one side revoked the contact.
	StateRevoked State = "revoked"
	// StateExpired is derived, never stored: an active contact past its
	// certificate's not_after.
	StateExpired State = "expired"
)

func (s State) stored() bool {
	switch s {
	case StatePendingIn, StatePendingOut, StateActive, StateDenied, StateRevoked:
		return true
	}
	return false
}

// Contact is this node's record of one remote peer. It is what the node
// persists (MarshalBinary) under the peer's key; Book returns copies.
type Contact struct {
	ID      string    // ID of the request that made or last changed this contact
	Peer    peer.ID   // the remote peer
	Handle  string    // the peer's display name, from its request or approval
	State   State     // as stored; Get and List report StateExpired when due
	Note    string    // the pending request's note (theirs for pending-in, ours for pending-out)
	Updated time.Time // when the state last changed
	Expires time.Time // the certificate's not_after; zero without a certificate

	Cert   []byte   // the sealed certificate (wire bytes), nil if none yet
	Seq    uint64   // highest certificate seq held or revoked with this peer
	Scopes []string // the certificate's scopes

	InRequest  []byte // the peer's pending request (wire), while pending-in
	OutRequest []byte // our pending request (wire), until answered; kept for redelivery
	Offer      []byte // certificate payload we approved and signed, awaiting the peer's countersignature
	OfferSig   []byte // our signature over Offer
	Revocation []byte // the last revocation we issued (wire), kept for redelivery

	// PeerRevocation is the peer's revocation of this contact (wire), kept
	// while the contact is revoked: the peer's node may be started on an
	// older copy of its home that forgot it, and is shown it back.
	PeerRevocation []byte

	// ShownCert is a certificate this node signed that the peer showed
	// while the book held none as new (the home restored from an older
	// copy, perhaps), kept while pending-in for the user to approve (it is
	// then active again) or deny.
	ShownCert []byte

	LastRevocationSeq uint64    // highest revocation seq seen from the peer
	RevokeSeq         uint64    // highest revocation seq we issued to the peer
	DeniedUntil       time.Time // the peer may not ask again before this (zero: may ask)
	Approver          bool      // this node approved the current certificate (only it may renew)

	// While pending-in: Known is set when the request came from a peer the
	// node knows (it never gives way to strangers' requests), and
	// PriorState is the state to go back to if the request is dropped (""
	// for none: the contact goes away).
	Known      bool
	PriorState State
}

// Revocations returns the revocations that end the contact's current
// certificate, to send to the peer while the contact is revoked: this
// node's own (Revocation, unless a later certificate outdated it), then
// the peer's (PeerRevocation). None unless the contact is revoked.
func (c *Contact) Revocations() [][]byte {
	if c.State != StateRevoked {
		return nil
	}
	var out [][]byte
	if c.Revocation != nil {
		if r, err := decodeRevocation(c.Revocation); err == nil && r.CertSeq >= c.Seq {
			out = append(out, c.Revocation)
		}
	}
	if c.PeerRevocation != nil {
		out = append(out, c.PeerRevocation)
	}
	return out
}

// RevokedHere reports whether the contact is revoked by this node: its own
// revocation ends the current certificate (not only the peer's).
func (c *Contact) RevokedHere() bool {
	if c.State != StateRevoked || c.Revocation == nil {
		return false
	}
	r, err := decodeRevocation(c.Revocation)
	return err == nil && r.CertSeq >= c.Seq
}

// stateAt returns the state as reported at now.
func (c *Contact) stateAt(now time.Time) State {
	if c.State == StateActive && !c.Expires.IsZero() && now.UnixMilli() >= c.Expires.UnixMilli() {
		return StateExpired
	}
	return c.State
}

func (c *Contact) clone() Contact {
	d := *c
	d.Scopes = slices.Clone(c.Scopes)
	d.Cert = bytes.Clone(c.Cert)
	d.InRequest = bytes.Clone(c.InRequest)
	d.OutRequest = bytes.Clone(c.OutRequest)
	d.Offer = bytes.Clone(c.Offer)
	d.OfferSig = bytes.Clone(c.OfferSig)
	d.Revocation = bytes.Clone(c.Revocation)
	d.PeerRevocation = bytes.Clone(c.PeerRevocation)
	d.ShownCert = bytes.Clone(c.ShownCert)
	return d
}

// contactRecord is the stored form of a Contact.
type contactRecord struct {
	V                 int      `cbor:"v"`
	ID                string   `cbor:"id"`
	Peer              []byte   `cbor:"peer"`
	Handle            string   `cbor:"handle"`
	State             string   `cbor:"state"`
	Note              string   `cbor:"note"`
	Updated           int64    `cbor:"updated"`
	Expires           int64    `cbor:"expires"`
	Cert              []byte   `cbor:"cert,omitempty"`
	Seq               uint64   `cbor:"seq"`
	Scopes            []string `cbor:"scopes,omitempty"`
	InRequest         []byte   `cbor:"in_req,omitempty"`
	OutRequest        []byte   `cbor:"out_req,omitempty"`
	Offer             []byte   `cbor:"offer,omitempty"`
	OfferSig          []byte   `cbor:"offer_sig,omitempty"`
	Revocation        []byte   `cbor:"revocation,omitempty"`
	PeerRevocation    []byte   `cbor:"peer_revocation,omitempty"`
	ShownCert         []byte   `cbor:"shown_cert,omitempty"`
	LastRevocationSeq uint64   `cbor:"last_rev_seq"`
	RevokeSeq         uint64   `cbor:"revoke_seq"`
	DeniedUntil       int64    `cbor:"denied_until"`
	Approver          bool     `cbor:"approver,omitempty"`
	Known             bool     `cbor:"known,omitempty"`
	PriorState        string   `cbor:"prior_state,omitempty"`
}

const recordVersion = 1

func toMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// MarshalBinary encodes the contact for storage (deterministic CBOR).
func (c Contact) MarshalBinary() ([]byte, error) {
	r := contactRecord{
		V: recordVersion, ID: c.ID, Peer: []byte(c.Peer), Handle: c.Handle, State: string(c.State), Note: c.Note,
		Updated: toMs(c.Updated), Expires: toMs(c.Expires), Cert: c.Cert, Seq: c.Seq, Scopes: c.Scopes,
		InRequest: c.InRequest, OutRequest: c.OutRequest, Offer: c.Offer, OfferSig: c.OfferSig, Revocation: c.Revocation,
		PeerRevocation: c.PeerRevocation, ShownCert: c.ShownCert, LastRevocationSeq: c.LastRevocationSeq, RevokeSeq: c.RevokeSeq, DeniedUntil: toMs(c.DeniedUntil),
		Approver: c.Approver, Known: c.Known, PriorState: string(c.PriorState),
	}
	if r.State == string(StateExpired) {
		r.State = string(StateActive)
	}
	b, err := encMode.Marshal(&r)
	if err != nil {
		return nil, fmt.Errorf("consent: encode contact %s: %w", c.Peer, err)
	}
	return b, nil
}

// UnmarshalBinary decodes a contact stored by MarshalBinary. It checks the
// record's shape only; Book.Load also verifies the certificate.
func (c *Contact) UnmarshalBinary(b []byte) error {
	var r contactRecord
	if err := recMode.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if r.V != recordVersion {
		return fmt.Errorf("%w: version %d", ErrBadRecord, r.V)
	}
	p, err := peer.IDFromBytes(r.Peer)
	if err != nil {
		return fmt.Errorf("%w: peer: %v", ErrBadRecord, err)
	}
	if !State(r.State).stored() {
		return fmt.Errorf("%w: state %q", ErrBadRecord, r.State)
	}
	if r.PriorState != "" && (!State(r.PriorState).stored() || State(r.PriorState) == StatePendingIn) {
		return fmt.Errorf("%w: prior state %q", ErrBadRecord, r.PriorState)
	}
	*c = Contact{
		ID: r.ID, Peer: p, Handle: r.Handle, State: State(r.State), Note: r.Note,
		Updated: fromMs(r.Updated), Expires: fromMs(r.Expires), Cert: r.Cert, Seq: r.Seq, Scopes: r.Scopes,
		InRequest: r.InRequest, OutRequest: r.OutRequest, Offer: r.Offer, OfferSig: r.OfferSig, Revocation: r.Revocation,
		PeerRevocation: r.PeerRevocation, ShownCert: r.ShownCert, LastRevocationSeq: r.LastRevocationSeq, RevokeSeq: r.RevokeSeq, DeniedUntil: fromMs(r.DeniedUntil),
		Approver: r.Approver, Known: r.Known, PriorState: State(r.PriorState),
	}
	return nil
}
