package consent

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// Request is a decoded, verified contact request: From asks To to become a
// contact. It is signed by From under identity.DomainContactReq.
type Request struct {
	ID     string    // RequestID of Wire
	From   peer.ID   // the requester, who signed it
	To     peer.ID   // the peer asked
	Handle string    // the requester's display name, at most MaxHandle runes
	Note   string    // the requester's own words, at most MaxNote runes
	Time   time.Time // when it was made (millisecond precision)
	Nonce  []byte    // 16 random bytes, so that equal requests differ
	Wire   []byte    // the signed wire bytes
}

// requestPayload is the signed part of a request.
type requestPayload struct {
	From   []byte `cbor:"from"`
	To     []byte `cbor:"to"`
	Handle string `cbor:"handle"`
	Note   string `cbor:"note"`
	Time   int64  `cbor:"time"`
	Nonce  []byte `cbor:"nonce"`
}

func (p *requestPayload) check() error {
	if len(p.Nonce) != nonceLen {
		return fmt.Errorf("%w: nonce of %d bytes, want %d", ErrMalformed, len(p.Nonce), nonceLen)
	}
	if p.Time <= 0 {
		return fmt.Errorf("%w: time %d", ErrMalformed, p.Time)
	}
	if err := checkText("handle", p.Handle, MaxHandle, false); err != nil {
		return err
	}
	return checkText("note", p.Note, MaxNote, true)
}

var idEnc = base32.StdEncoding.WithPadding(base32.NoPadding)

// RequestID returns the ID of a request: the first 16 characters of the
// lower-case base32 SHA-256 of its wire bytes. Wire bytes are canonical, so
// the ID is stable.
func RequestID(wire []byte) string {
	sum := sha256.Sum256(wire)
	return strings.ToLower(idEnc.EncodeToString(sum[:]))[:16]
}

// NewRequest makes a contact request from priv's peer to peer to, signed
// under identity.DomainContactReq. handle is the requester's display name
// (at most MaxHandle runes, may be empty); note at most MaxNote runes.
func NewRequest(priv crypto.PrivKey, to peer.ID, handle, note string, now time.Time) ([]byte, error) {
	from, err := identity.PeerID(priv)
	if err != nil {
		return nil, fmt.Errorf("consent: new request: %w", err)
	}
	if from == to {
		return nil, fmt.Errorf("consent: new request: %w: request to self", ErrWrongPeers)
	}
	if _, err := peerFromBytes("to", []byte(to)); err != nil {
		return nil, fmt.Errorf("consent: new request: %w", err)
	}
	p := requestPayload{From: []byte(from), To: []byte(to), Handle: handle, Note: note, Time: now.UnixMilli(), Nonce: make([]byte, nonceLen)}
	if _, err := rand.Read(p.Nonce); err != nil {
		return nil, fmt.Errorf("consent: new request: %w", err)
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("consent: new request: %w", err)
	}
	wire, err := sealOne(priv, identity.DomainContactReq, &p)
	if err != nil {
		return nil, fmt.Errorf("consent: new request: %w", err)
	}
	return wire, nil
}

// sealOne encodes payload, signs it under domain and returns the
// {payload, sig} wire bytes.
func sealOne(priv crypto.PrivKey, domain string, payload any) ([]byte, error) {
	pb, err := encMode.Marshal(payload)
	if err != nil {
		return nil, err
	}
	sig, err := identity.Sign(priv, domain, pb)
	if err != nil {
		return nil, err
	}
	return encMode.Marshal(signedWire{Payload: pb, Sig: sig})
}

// DecodeRequest decodes wire, checks that it is canonical, within the
// limits, and signed by its From peer.
func DecodeRequest(wire []byte) (*Request, error) {
	r, err := decodeRequest(wire)
	if err != nil {
		return nil, fmt.Errorf("consent: decode request: %w", err)
	}
	return r, nil
}

func decodeRequest(wire []byte) (*Request, error) {
	if len(wire) > MaxFrame {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, len(wire))
	}
	w, err := decodeSigned(wire)
	if err != nil {
		return nil, err
	}
	var p requestPayload
	if err := decodeCanonical(w.Payload, &p); err != nil {
		return nil, err
	}
	from, err := peerFromBytes("from", p.From)
	if err != nil {
		return nil, err
	}
	to, err := peerFromBytes("to", p.To)
	if err != nil {
		return nil, err
	}
	if from == to {
		return nil, fmt.Errorf("%w: request to self", ErrWrongPeers)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := identity.Verify(from, identity.DomainContactReq, w.Payload, w.Sig); err != nil {
		return nil, err
	}
	return &Request{
		ID: RequestID(wire), From: from, To: to, Handle: p.Handle, Note: p.Note,
		Time: time.UnixMilli(p.Time), Nonce: p.Nonce, Wire: bytes.Clone(wire),
	}, nil
}
