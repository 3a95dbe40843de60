package identity

import (
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// Signing domains. Each record type Parley signs has its own, so that a
// signature made for one can never verify as another.
const (
	DomainRoomEvent   = "parley-room-event"
	DomainContactCert = "parley-contact-cert"
	DomainContactReq  = "parley-contact-request"
	DomainRevocation  = "parley-contact-revocation"
	DomainAgentCard   = "parley-agent-card"
	DomainPresence    = "parley-presence"
	DomainAudit       = "parley-audit"
	DomainOrgRecord   = "parley-org-record"
	DomainNodeCard    = "parley-node-card"
)

// domainBuf holds the signed bytes (domain, 0, payload) while one
// signature is made or checked; Ed25519 keeps nothing of them after.
var domainBuf = sync.Pool{New: func() any { return new([]byte) }}

// withDomain calls f with the bytes that are signed for payload under
// domain, in a buffer reused across calls.
func withDomain[T any](domain string, payload []byte, f func([]byte) (T, error)) (T, error) {
	bp := domainBuf.Get().(*[]byte)
	b := append(append(append((*bp)[:0], domain...), 0), payload...)
	v, err := f(b)
	if cap(b) <= 128<<10 { // keep no huge buffer
		*bp = b
		domainBuf.Put(bp)
	}
	return v, err
}

// Ed25519 signatures are made and checked with curve25519-voi, which does
// either in half the time Go's crypto/ed25519 takes (its vector backend on
// amd64, and a faster double-base multiplication): every event a node
// receives is checked, on the way from one hop to the next. Signatures are
// deterministic, so they are the bytes crypto/ed25519 makes, and checks use
// voi's crypto/ed25519 profile (cofactorless, non-canonical and small-order
// keys accepted, S below the group order), so every node, on either
// implementation, accepts the same signatures: sign_test.go compares both
// on the encodings where Ed25519 implementations are known to differ.
var stdlibRules = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// Sign signs payload under domain.
func Sign(priv crypto.PrivKey, domain string, payload []byte) ([]byte, error) {
	sign := priv.Sign
	if k, ok := priv.(*crypto.Ed25519PrivateKey); ok {
		raw, err := k.Raw()
		if err != nil || len(raw) != voi.PrivateKeySize {
			return nil, fmt.Errorf("identity: sign %s: bad Ed25519 key", domain)
		}
		sign = func(b []byte) ([]byte, error) { return voi.Sign(voi.PrivateKey(raw), b), nil }
	}
	sig, err := withDomain(domain, payload, sign)
	if err != nil {
		return nil, fmt.Errorf("identity: sign %s: %w", domain, err)
	}
	return sig, nil
}

// Verify checks that sig is signer's signature of payload under domain. The
// public key is taken from the peer ID itself (Ed25519 peer IDs embed it), so
// no key needs to travel with the signature.
func Verify(signer peer.ID, domain string, payload, sig []byte) error {
	pub, err := signer.ExtractPublicKey()
	if err != nil {
		return fmt.Errorf("%w: peer %s has no embedded key: %v", ErrBadSignature, signer, err)
	}
	if !verify(pub, domain, payload, sig) {
		return fmt.Errorf("%w: not signed by %s", ErrBadSignature, signer)
	}
	return nil
}

// VerifyKey is Verify with the signer's public key at hand (taken from its
// peer ID by the caller).
func VerifyKey(pub crypto.PubKey, domain string, payload, sig []byte) error {
	if !verify(pub, domain, payload, sig) {
		return fmt.Errorf("%w: bad signature", ErrBadSignature)
	}
	return nil
}

func verify(pub crypto.PubKey, domain string, payload, sig []byte) bool {
	check := func(b []byte) (bool, error) { return pub.Verify(b, sig) }
	if k, ok := pub.(*crypto.Ed25519PublicKey); ok {
		raw, err := k.Raw()
		if err != nil || len(raw) != voi.PublicKeySize {
			return false
		}
		check = func(b []byte) (bool, error) {
			return voi.VerifyWithOptions(voi.PublicKey(raw), b, sig, stdlibRules), nil
		}
	}
	ok, err := withDomain(domain, payload, check)
	return err == nil && ok
}
