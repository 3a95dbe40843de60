package identity

import (
	"fmt"

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

func domainBytes(domain string, payload []byte) []byte {
	b := make([]byte, 0, len(domain)+1+len(payload))
	b = append(b, domain...)
	b = append(b, 0)
	return append(b, payload...)
}

// Sign signs payload under domain.
func Sign(priv crypto.PrivKey, domain string, payload []byte) ([]byte, error) {
	sig, err := priv.Sign(domainBytes(domain, payload))
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
	ok, err := pub.Verify(domainBytes(domain, payload), sig)
	if err != nil || !ok {
		return fmt.Errorf("%w: not signed by %s", ErrBadSignature, signer)
	}
	return nil
}
