package consent

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// Scopes a certificate can grant.
const (
	ScopeInvite   = "invite"   // invite the other peer's agents into rooms
	ScopeAsk      = "ask"      // direct asks between agents of the two nodes
	ScopePresence = "presence" // see what the other peer's agents are working on
)

// DefaultScopes are the scopes a Book grants when its Policy names none.
var DefaultScopes = []string{ScopeAsk, ScopeInvite, ScopePresence}

// Certificate is a decoded contact certificate: one payload naming two peers,
// signed by both under identity.DomainContactCert. A is the peer whose ID
// bytes sort first.
type Certificate struct {
	A, B      peer.ID
	Scopes    []string  // sorted, unique
	NotBefore time.Time // valid from (inclusive)
	NotAfter  time.Time // valid until (exclusive)
	Seq       uint64    // grows with every certificate between the same two peers
	Payload   []byte    // canonical CBOR payload, what both signed
	SigA      []byte    // A's signature; nil for a payload not yet sealed
	SigB      []byte    // B's signature; nil for a payload not yet sealed
}

// certPayload is the signed part of a certificate.
type certPayload struct {
	A         []byte   `cbor:"a"`
	B         []byte   `cbor:"b"`
	Scopes    []string `cbor:"scopes"`
	NotBefore int64    `cbor:"not_before"`
	NotAfter  int64    `cbor:"not_after"`
	Seq       uint64   `cbor:"seq"`
}

// certWire is the wire form of a sealed certificate.
type certWire struct {
	Payload []byte `cbor:"payload"`
	SigA    []byte `cbor:"sig_a"`
	SigB    []byte `cbor:"sig_b"`
}

// NewCertPayload returns the canonical payload of a certificate between p
// and q (in either order) granting scopes from notBefore until notAfter.
// Scopes are sorted and de-duplicated; at least one is needed.
func NewCertPayload(p, q peer.ID, scopes []string, notBefore, notAfter time.Time, seq uint64) ([]byte, error) {
	a, b := p, q
	if bytes.Compare([]byte(a), []byte(b)) > 0 {
		a, b = b, a
	}
	cp := certPayload{
		A: []byte(a), B: []byte(b), Scopes: slices.Compact(slices.Sorted(slices.Values(scopes))),
		NotBefore: notBefore.UnixMilli(), NotAfter: notAfter.UnixMilli(), Seq: seq,
	}
	if _, err := cp.check(); err != nil {
		return nil, fmt.Errorf("consent: new certificate: %w", err)
	}
	b2, err := encMode.Marshal(&cp)
	if err != nil {
		return nil, fmt.Errorf("consent: new certificate: %w", err)
	}
	return b2, nil
}

// check validates a decoded payload and returns it as a Certificate
// (without Payload or signatures).
func (cp *certPayload) check() (*Certificate, error) {
	a, err := peerFromBytes("a", cp.A)
	if err != nil {
		return nil, err
	}
	b, err := peerFromBytes("b", cp.B)
	if err != nil {
		return nil, err
	}
	if bytes.Compare(cp.A, cp.B) >= 0 {
		return nil, fmt.Errorf("%w: peers not two distinct peers in canonical order", ErrMalformed)
	}
	if len(cp.Scopes) == 0 || len(cp.Scopes) > MaxScopes {
		return nil, fmt.Errorf("%w: %d scopes, want 1 to %d", ErrMalformed, len(cp.Scopes), MaxScopes)
	}
	for i, s := range cp.Scopes {
		if err := checkScope(s); err != nil {
			return nil, err
		}
		if i > 0 && cp.Scopes[i-1] >= s {
			return nil, fmt.Errorf("%w: scopes not sorted and unique", ErrMalformed)
		}
	}
	if cp.NotBefore < 0 || cp.NotAfter <= cp.NotBefore {
		return nil, fmt.Errorf("%w: validity %d..%d", ErrMalformed, cp.NotBefore, cp.NotAfter)
	}
	return &Certificate{
		A: a, B: b, Scopes: cp.Scopes, Seq: cp.Seq,
		NotBefore: time.UnixMilli(cp.NotBefore), NotAfter: time.UnixMilli(cp.NotAfter),
	}, nil
}

// ParseCertPayload decodes and checks an unsigned certificate payload (an
// offer): canonical CBOR, two peers in order, scopes and validity. It
// checks no signature; the result has no SigA or SigB.
func ParseCertPayload(payload []byte) (*Certificate, error) {
	c, err := parseCertPayload(payload)
	if err != nil {
		return nil, fmt.Errorf("consent: parse certificate payload: %w", err)
	}
	return c, nil
}

// parseCertPayload decodes and checks an unsigned certificate payload.
func parseCertPayload(payload []byte) (*Certificate, error) {
	if len(payload) > MaxFrame {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, len(payload))
	}
	var cp certPayload
	if err := decodeCanonical(payload, &cp); err != nil {
		return nil, err
	}
	c, err := cp.check()
	if err != nil {
		return nil, err
	}
	c.Payload = bytes.Clone(payload)
	return c, nil
}

// SignCert signs a certificate payload with priv under
// identity.DomainContactCert. The signer must be one of the two peers.
func SignCert(priv crypto.PrivKey, payload []byte) ([]byte, error) {
	c, err := parseCertPayload(payload)
	if err != nil {
		return nil, fmt.Errorf("consent: sign certificate: %w", err)
	}
	self, err := identity.PeerID(priv)
	if err != nil {
		return nil, fmt.Errorf("consent: sign certificate: %w", err)
	}
	if self != c.A && self != c.B {
		return nil, fmt.Errorf("consent: sign certificate: %w: signer %s is not a party", ErrWrongPeers, self)
	}
	sig, err := identity.Sign(priv, identity.DomainContactCert, payload)
	if err != nil {
		return nil, fmt.Errorf("consent: sign certificate: %w", err)
	}
	return sig, nil
}

// AssembleCert seals a payload with the signatures of its two peers, given in
// either order, and returns the certificate's wire bytes. It fails with
// ErrBadSignature unless one signature is A's and the other B's.
func AssembleCert(payload, sig1, sig2 []byte) ([]byte, error) {
	c, err := parseCertPayload(payload)
	if err != nil {
		return nil, fmt.Errorf("consent: assemble certificate: %w", err)
	}
	if err := checkSig(sig1); err != nil {
		return nil, fmt.Errorf("consent: assemble certificate: %w", err)
	}
	if err := checkSig(sig2); err != nil {
		return nil, fmt.Errorf("consent: assemble certificate: %w", err)
	}
	sigA, sigB := sig1, sig2
	if verifyCert(c.A, payload, sigA) != nil {
		sigA, sigB = sig2, sig1
	}
	if err := verifyCert(c.A, payload, sigA); err != nil {
		return nil, fmt.Errorf("consent: assemble certificate: %w", err)
	}
	if err := verifyCert(c.B, payload, sigB); err != nil {
		return nil, fmt.Errorf("consent: assemble certificate: %w", err)
	}
	wire, err := encMode.Marshal(certWire{Payload: payload, SigA: sigA, SigB: sigB})
	if err != nil {
		return nil, fmt.Errorf("consent: assemble certificate: %w", err)
	}
	return wire, nil
}

func verifyCert(signer peer.ID, payload, sig []byte) error {
	return identity.Verify(signer, identity.DomainContactCert, payload, sig)
}

// DecodeCertificate decodes a sealed certificate, checks that wire and
// payload are canonical CBOR and that both peers signed the payload. It does
// not check time or which peers it is for: call Check for that.
func DecodeCertificate(wire []byte) (*Certificate, error) {
	c, err := decodeCertificate(wire)
	if err != nil {
		return nil, fmt.Errorf("consent: decode certificate: %w", err)
	}
	return c, nil
}

func decodeCertificate(wire []byte) (*Certificate, error) {
	c, w, err := parseCertUnverified(wire)
	if err != nil {
		return nil, err
	}
	if err := verifyCert(c.A, w.Payload, w.SigA); err != nil {
		return nil, err
	}
	if err := verifyCert(c.B, w.Payload, w.SigB); err != nil {
		return nil, err
	}
	c.SigA, c.SigB = w.SigA, w.SigB
	return c, nil
}

// parseCertUnverified decodes a sealed certificate and its payload,
// canonical, without checking its signatures (decodeCertificate does).
func parseCertUnverified(wire []byte) (*Certificate, certWire, error) {
	var w certWire
	if len(wire) > MaxFrame {
		return nil, w, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, len(wire))
	}
	if err := decodeCanonical(wire, &w); err != nil {
		return nil, w, err
	}
	if err := checkSig(w.SigA); err != nil {
		return nil, w, err
	}
	if err := checkSig(w.SigB); err != nil {
		return nil, w, err
	}
	c, err := parseCertPayload(w.Payload)
	return c, w, err
}

// Check reports whether c is a certificate between self and other that is
// valid at now. It returns ErrWrongPeers, ErrNotYetValid or ErrExpired
// (wrapped), or nil. Signatures are checked by DecodeCertificate.
func (c *Certificate) Check(self, other peer.ID, now time.Time) error {
	if !c.Between(self, other) {
		return fmt.Errorf("%w: certificate between %s and %s", ErrWrongPeers, c.A, c.B)
	}
	ms := now.UnixMilli()
	if ms < c.NotBefore.UnixMilli() {
		return fmt.Errorf("%w: valid from %s", ErrNotYetValid, c.NotBefore.UTC().Format(time.RFC3339))
	}
	if ms >= c.NotAfter.UnixMilli() {
		return fmt.Errorf("%w: valid until %s", ErrExpired, c.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// Between reports whether c names exactly the two peers p and q (in either order).
func (c *Certificate) Between(p, q peer.ID) bool {
	return p != q && (c.A == p && c.B == q || c.A == q && c.B == p)
}

// HasScope reports whether c grants scope.
func (c *Certificate) HasScope(scope string) bool {
	_, ok := slices.BinarySearch(c.Scopes, scope)
	return ok
}
