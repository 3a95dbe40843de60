package discovery

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/canon"
)

// A node card names a node for people: its user's handle, signed by the
// node's key, so any node may hand it on and any reader can check it. Its
// payload is a CBOR map with small-integer keys in core deterministic mode:
//
//	1 v       uint   version, 1
//	2 peer    bytes  the node's peer ID (Ed25519 only)
//	3 handle  text   the user's handle, 1–64 bytes, one line (see checkLine)
//	4 seq     uint   ≥ 1; a higher seq replaces a lower one (unix ms at sealing)
//	5 member  bytes  optional: the node's organisation membership certificate
//	                 (a sealed consent.OrgRecord, at most MaxNodeCardMember
//	                 bytes), carried as it is: readers check it themselves
//
// The wire form is {1: payload, 2: sig} with sig the node's signature under
// identity.DomainNodeCard, at most MaxNodeCardWire bytes, in one encoding.

// Node card limits.
const (
	NodeCardVersion   = 1
	MaxNodeCardMember = 4096
	MaxNodeCardWire   = 512 + MaxNodeCardMember
)

// NodeCard is a node's signed handle.
type NodeCard struct {
	Peer   peer.ID
	Handle string
	Seq    uint64
	// Member is the node's membership certificate of its organisation
	// (a sealed consent.OrgRecord), nil without one. The card's signature
	// says only that the node shows it: readers verify it.
	Member []byte
}

type nodeCardPayload struct {
	V      uint64 `cbor:"1,keyasint,omitempty"`
	Peer   []byte `cbor:"2,keyasint,omitempty"`
	Handle string `cbor:"3,keyasint,omitempty"`
	Seq    uint64 `cbor:"4,keyasint,omitempty"`
	Member []byte `cbor:"5,keyasint,omitempty"`
}

var nodeCardDec = canon.StrictDec(16) // a node card holds no array; 16 is the least the decoder takes

func (c *NodeCard) validate() error {
	if err := checkSigner(c.Peer); err != nil {
		return err
	}
	if c.Handle == "" {
		return fmt.Errorf("%w: empty handle", ErrMalformed)
	}
	if err := checkHandle(c.Handle); err != nil {
		return err
	}
	if c.Seq == 0 {
		return fmt.Errorf("%w: node card seq 0", ErrMalformed)
	}
	if len(c.Member) > MaxNodeCardMember {
		return fmt.Errorf("%w: membership certificate is %d bytes, limit %d", ErrTooLarge, len(c.Member), MaxNodeCardMember)
	}
	return nil
}

// SealNodeCard signs c with priv; c.Peer must be priv's peer ID.
func SealNodeCard(priv crypto.PrivKey, c *NodeCard) ([]byte, error) {
	if err := checkSelf(priv, c.Peer); err != nil {
		return nil, fmt.Errorf("discovery: seal node card: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("discovery: seal node card: %w", err)
	}
	p := nodeCardPayload{V: NodeCardVersion, Peer: []byte(c.Peer), Handle: c.Handle, Seq: c.Seq, Member: c.Member}
	wire, err := seal(priv, identity.DomainNodeCard, p, MaxNodeCardWire)
	if err != nil {
		return nil, fmt.Errorf("discovery: seal node card: %w", err)
	}
	return wire, nil
}

// DecodeNodeCard checks and decodes a node card: size first, then the one
// canonical encoding, the version, the limits and the signature of the
// card's own peer.
func DecodeNodeCard(wire []byte) (*NodeCard, error) {
	c, err := decodeNodeCard(wire)
	if err != nil {
		return nil, fmt.Errorf("discovery: decode node card: %w", err)
	}
	return c, nil
}

func decodeNodeCard(wire []byte) (*NodeCard, error) {
	if len(wire) > MaxNodeCardWire {
		return nil, fmt.Errorf("%w: node card is %d bytes, limit %d", ErrTooLarge, len(wire), MaxNodeCardWire)
	}
	var s signedWire
	if err := unmarshalCanonical(nodeCardDec, wire, &s); err != nil {
		return nil, fmt.Errorf("wire: %w", err)
	}
	var p nodeCardPayload
	if err := unmarshalCanonical(nodeCardDec, s.Payload, &p); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if p.V != NodeCardVersion {
		return nil, fmt.Errorf("%w: node card version %d", ErrBadVersion, p.V)
	}
	id, err := peer.IDFromBytes(p.Peer)
	if err != nil {
		return nil, fmt.Errorf("%w: peer: %v", ErrBadPeer, err)
	}
	c := &NodeCard{Peer: id, Handle: p.Handle, Seq: p.Seq, Member: p.Member}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := identity.Verify(id, identity.DomainNodeCard, s.Payload, s.Sig); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return c, nil
}
