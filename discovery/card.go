package discovery

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// Limits of the agent card (version 1). Changing any of them changes which
// cards a node accepts, so they are part of the protocol.
const (
	// Namespace is the DHT record namespace of agent cards; register
	// Validator under it.
	Namespace = "parley-agent"
	// CardVersion is the only card version this package reads and writes.
	CardVersion = 1
	// MaxCardWire is the largest signed wire form of a card. DecodeCard and
	// Validator refuse anything longer before decoding it.
	MaxCardWire = 4 << 10
	// MaxCardMember is the largest membership certificate a card carries.
	MaxCardMember = 1 << 10
	// MaxText is the longest Handle, Role and Client, in bytes.
	MaxText = 64
	// MaxCapabilities is the most capabilities of one card or agent state.
	MaxCapabilities = 32
	// MaxCapability is the longest capability, in bytes.
	MaxCapability = 64
	// MaxCardTTL is the longest a card may live: Validator refuses a card
	// that expires more than MaxCardTTL+MaxClockSkew after its clock's now.
	// A node re-publishes its cards well before they expire.
	MaxCardTTL = 24 * time.Hour
	// MaxClockSkew is the clock difference Validator tolerates between the
	// publisher and itself when checking the lifetime of a card.
	MaxClockSkew = 10 * time.Minute
)

// Card is an agent's public card, signed by its node's key and published in
// the DHT under CardKey(Peer, Agent). It carries only what anyone may see;
// what an agent works on travels in Presence, to contacts only.
type Card struct {
	Peer         peer.ID            // the node (Ed25519 peer ID) that signs the card
	Handle       string             // optional: the user's handle, ≤ MaxText bytes of one-line text
	Agent        identity.AgentName // the agent on Peer's node
	Role         string             // optional: what the agent is for, ≤ MaxText bytes of one-line text
	Capabilities []string           // ≤ MaxCapabilities, each 1–64 of [a-z0-9._-], sorted, unique
	Client       string             // optional: the agent's client, e.g. "claude-code", ≤ MaxText bytes
	Seq          uint64             // ≥ 1; a higher seq replaces a lower one (use unix ms at sealing)
	Expires      int64              // unix milliseconds, > 0; expired cards are invalid
	// Member is optional: the node's organisation membership certificate
	// (a sealed consent.OrgRecord, ≤ MaxCardMember bytes), carried as it
	// is; readers check it themselves.
	Member []byte
}

// Key returns the DHT record key of the card, CardKey(c.Peer, c.Agent).
func (c *Card) Key() string { return CardKey(c.Peer, c.Agent) }

// CardKey returns the DHT record key of agent's card on node p:
// "/parley-agent/" + p.String() + "/" + agent.
func CardKey(p peer.ID, agent identity.AgentName) string {
	return "/" + Namespace + "/" + p.String() + "/" + string(agent)
}

// maxKey bounds the record keys ParseCardKey looks at; real keys are about
// 120 bytes.
const maxKey = 256

// ParseCardKey parses a key made by CardKey. Only the canonical form is
// accepted: the peer ID as peer.ID.String writes it and a valid agent name.
func ParseCardKey(key string) (peer.ID, identity.AgentName, error) {
	p, a, err := parseCardKey(key)
	if err != nil {
		return "", "", fmt.Errorf("discovery: parse card key: %w", err)
	}
	return p, a, nil
}

func parseCardKey(key string) (peer.ID, identity.AgentName, error) {
	if len(key) > maxKey {
		return "", "", fmt.Errorf("%w: %d bytes, limit %d", ErrBadKey, len(key), maxKey)
	}
	rest, ok := strings.CutPrefix(key, "/"+Namespace+"/")
	if !ok {
		return "", "", fmt.Errorf("%w: %q is not in namespace /%s/", ErrBadKey, key, Namespace)
	}
	ps, as, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", fmt.Errorf("%w: %q has no agent", ErrBadKey, key)
	}
	p, err := peer.Decode(ps)
	if err != nil || p.String() != ps {
		return "", "", fmt.Errorf("%w: %q: peer id not in canonical form", ErrBadKey, key)
	}
	a, err := identity.ParseAgentName(as)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	return p, a, nil
}

// SortCapabilities sorts caps and removes duplicates in place, giving the
// order Card.Capabilities and AgentState.Capabilities must have. It
// returns the shortened slice.
func SortCapabilities(caps []string) []string {
	slices.Sort(caps)
	return slices.Compact(caps)
}

// cardPayload is the signed CBOR form of a Card. Zero values are left out,
// so each Card has one encoding.
type cardPayload struct {
	V       uint64   `cbor:"1,keyasint,omitempty"`
	Peer    []byte   `cbor:"2,keyasint,omitempty"`
	Handle  string   `cbor:"3,keyasint,omitempty"`
	Agent   string   `cbor:"4,keyasint,omitempty"`
	Role    string   `cbor:"5,keyasint,omitempty"`
	Caps    []string `cbor:"6,keyasint,omitempty"`
	Client  string   `cbor:"7,keyasint,omitempty"`
	Seq     uint64   `cbor:"8,keyasint,omitempty"`
	Expires int64    `cbor:"9,keyasint,omitempty"`
	Member  []byte   `cbor:"10,keyasint,omitempty"`
}

func (c *Card) payload() cardPayload {
	return cardPayload{
		V:       CardVersion,
		Peer:    []byte(c.Peer),
		Handle:  c.Handle,
		Agent:   string(c.Agent),
		Role:    c.Role,
		Caps:    c.Capabilities,
		Client:  c.Client,
		Seq:     c.Seq,
		Expires: c.Expires,
		Member:  c.Member,
	}
}

// validate checks every rule that needs nothing but the card itself (not
// the clock, not the record key).
func (c *Card) validate() error {
	if err := checkSigner(c.Peer); err != nil {
		return err
	}
	if err := checkHandle(c.Handle); err != nil {
		return err
	}
	if _, err := identity.ParseAgentName(string(c.Agent)); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := checkLine(c.Role, MaxText, "role"); err != nil {
		return err
	}
	if err := checkLine(c.Client, MaxText, "client"); err != nil {
		return err
	}
	if err := checkCapabilities(c.Capabilities); err != nil {
		return err
	}
	if c.Seq == 0 {
		return fmt.Errorf("%w: card seq 0", ErrMalformed)
	}
	if c.Expires <= 0 {
		return fmt.Errorf("%w: card expiry %d", ErrMalformed, c.Expires)
	}
	if len(c.Member) > MaxCardMember {
		return fmt.Errorf("%w: membership certificate is %d bytes, limit %d", ErrTooLarge, len(c.Member), MaxCardMember)
	}
	return nil
}

// SealCard signs c with priv (domain identity.DomainAgentCard) and returns
// its wire bytes. c.Peer must be priv's peer ID and c.Capabilities sorted
// and unique (see SortCapabilities). SealCard refuses any card DecodeCard
// would refuse; it does not look at the clock.
func SealCard(priv crypto.PrivKey, c *Card) ([]byte, error) {
	wire, err := sealCard(priv, c)
	if err != nil {
		return nil, fmt.Errorf("discovery: seal card: %w", err)
	}
	return wire, nil
}

func sealCard(priv crypto.PrivKey, c *Card) ([]byte, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil card", ErrMalformed)
	}
	if err := checkSelf(priv, c.Peer); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return seal(priv, identity.DomainAgentCard, c.payload(), MaxCardWire)
}

// DecodeCard checks and decodes a card's wire bytes. It refuses input over
// MaxCardWire bytes before decoding, any encoding but the canonical one,
// unknown versions, broken limits, and a signature that is not Card.Peer's.
// It does not check expiry or the record key: Validator does. The returned
// card shares no memory with wire; empty Capabilities decode as nil.
func DecodeCard(wire []byte) (*Card, error) {
	c, s, err := decodeCard(wire)
	if err == nil {
		err = verifyCard(c, s)
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: decode card: %w", err)
	}
	return c, nil
}

// decodeCard decodes and checks a card but not its signature, so that
// callers can run cheap checks before the costly one (verifyCard).
func decodeCard(wire []byte) (*Card, *signedWire, error) {
	if len(wire) > MaxCardWire {
		return nil, nil, fmt.Errorf("%w: card is %d bytes, limit %d", ErrTooLarge, len(wire), MaxCardWire)
	}
	var s signedWire
	if err := unmarshalCanonical(cardDec, wire, &s); err != nil {
		return nil, nil, fmt.Errorf("wire: %w", err)
	}
	var p cardPayload
	if err := unmarshalCanonical(cardDec, s.Payload, &p); err != nil {
		return nil, nil, fmt.Errorf("payload: %w", err)
	}
	if p.V != CardVersion {
		return nil, nil, fmt.Errorf("%w: card version %d", ErrBadVersion, p.V)
	}
	id, err := peer.IDFromBytes(p.Peer)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: peer: %v", ErrBadPeer, err)
	}
	c := &Card{
		Peer:         id,
		Handle:       p.Handle,
		Agent:        identity.AgentName(p.Agent),
		Role:         p.Role,
		Capabilities: p.Caps,
		Client:       p.Client,
		Seq:          p.Seq,
		Expires:      p.Expires,
		Member:       p.Member,
	}
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	return c, &s, nil
}

func verifyCard(c *Card, s *signedWire) error {
	if err := identity.Verify(c.Peer, identity.DomainAgentCard, s.Payload, s.Sig); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return nil
}
