package consent

import (
	"bytes"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// Revocation is a decoded, verified revocation: Issuer withdraws its consent
// to Subject, ending every certificate between them with seq ≤ CertSeq. It
// is signed by Issuer under identity.DomainRevocation.
type Revocation struct {
	Issuer  peer.ID
	Subject peer.ID
	CertSeq uint64    // the highest certificate seq it ends
	Time    time.Time // when it was made (millisecond precision)
	Seq     uint64    // grows with each revocation from Issuer to Subject
	Wire    []byte    // the signed wire bytes
}

// revocationPayload is the signed part of a revocation.
type revocationPayload struct {
	Issuer  []byte `cbor:"issuer"`
	Subject []byte `cbor:"subject"`
	CertSeq uint64 `cbor:"cert_seq"`
	Time    int64  `cbor:"time"`
	Seq     uint64 `cbor:"seq"`
}

// NewRevocation makes a revocation by priv's peer of subject, ending
// certificates up to certSeq. seq must grow with every revocation the
// issuer makes for subject (Book uses max(last+1, unix ms)).
func NewRevocation(priv crypto.PrivKey, subject peer.ID, certSeq, seq uint64, now time.Time) ([]byte, error) {
	issuer, err := identity.PeerID(priv)
	if err != nil {
		return nil, fmt.Errorf("consent: new revocation: %w", err)
	}
	if issuer == subject {
		return nil, fmt.Errorf("consent: new revocation: %w: revocation of self", ErrWrongPeers)
	}
	if _, err := peerFromBytes("subject", []byte(subject)); err != nil {
		return nil, fmt.Errorf("consent: new revocation: %w", err)
	}
	p := revocationPayload{Issuer: []byte(issuer), Subject: []byte(subject), CertSeq: certSeq, Time: now.UnixMilli(), Seq: seq}
	if p.Time <= 0 || p.Seq == 0 {
		return nil, fmt.Errorf("consent: new revocation: %w: time %d, seq %d", ErrMalformed, p.Time, p.Seq)
	}
	wire, err := sealOne(priv, identity.DomainRevocation, &p)
	if err != nil {
		return nil, fmt.Errorf("consent: new revocation: %w", err)
	}
	return wire, nil
}

// DecodeRevocation decodes wire, checks that it is canonical and signed by
// its issuer. Replays are caught by Book.ApplyRevocation, not here.
func DecodeRevocation(wire []byte) (*Revocation, error) {
	r, err := decodeRevocation(wire)
	if err != nil {
		return nil, fmt.Errorf("consent: decode revocation: %w", err)
	}
	return r, nil
}

func decodeRevocation(wire []byte) (*Revocation, error) {
	if len(wire) > MaxFrame {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, len(wire))
	}
	w, err := decodeSigned(wire)
	if err != nil {
		return nil, err
	}
	var p revocationPayload
	if err := decodeCanonical(w.Payload, &p); err != nil {
		return nil, err
	}
	issuer, err := peerFromBytes("issuer", p.Issuer)
	if err != nil {
		return nil, err
	}
	subject, err := peerFromBytes("subject", p.Subject)
	if err != nil {
		return nil, err
	}
	if issuer == subject {
		return nil, fmt.Errorf("%w: revocation of self", ErrWrongPeers)
	}
	if p.Time <= 0 || p.Seq == 0 {
		return nil, fmt.Errorf("%w: time %d, seq %d", ErrMalformed, p.Time, p.Seq)
	}
	if err := identity.Verify(issuer, identity.DomainRevocation, w.Payload, w.Sig); err != nil {
		return nil, err
	}
	return &Revocation{
		Issuer: issuer, Subject: subject, CertSeq: p.CertSeq,
		Time: time.UnixMilli(p.Time), Seq: p.Seq, Wire: bytes.Clone(wire),
	}, nil
}
