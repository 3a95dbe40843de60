package identity

import (
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
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

// Sign signs payload under domain.
func Sign(priv crypto.PrivKey, domain string, payload []byte) ([]byte, error) {
	sig, err := withDomain(domain, payload, priv.Sign)
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
	ok, err := withDomain(domain, payload, func(b []byte) (bool, error) { return pub.Verify(b, sig) })
	return err == nil && ok
}
