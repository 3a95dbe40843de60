package discovery

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/identity"
)

// ProtocolPresence is the stream protocol on which a node sends its
// presence to its contacts.
const ProtocolPresence protocol.ID = "/parley/presence/1"

// Limits and timing of presence (version 1).
const (
	// PresenceVersion is the only presence version this package reads and writes.
	PresenceVersion = 1
	// MaxPresenceWire is the largest signed wire form of a presence message.
	MaxPresenceWire = 64 << 10
	// MaxFrame is the largest frame body of /parley/presence/1.
	MaxFrame = MaxPresenceWire
	// MaxAgents is the most agents in one presence message.
	MaxAgents = 64
	// MaxWorkingOn is the longest AgentState.WorkingOn, in characters (runes).
	MaxWorkingOn = 500
	// PresenceHeartbeat is how often a node re-sends unchanged presence to
	// each connected contact.
	PresenceHeartbeat = 5 * time.Minute
	// PresenceMinInterval is the shortest time between two presence
	// messages to one contact; changes within it are coalesced.
	PresenceMinInterval = 2 * time.Second
)

// State is what an agent is doing.
type State string

// The states of version 1.
const (
	StateIdle    State = "idle"    // attached and waiting for work
	StateBusy    State = "busy"    // attached and working
	StateOffline State = "offline" // not attached to its node
)

func (s State) known() bool {
	return s == StateIdle || s == StateBusy || s == StateOffline
}

// AgentState is what a contact sees of one agent.
type AgentState struct {
	Agent        identity.AgentName
	State        State
	WorkingOn    string   // optional: ≤ MaxWorkingOn characters, may span lines
	LastSeen     int64    // unix milliseconds the agent was last active, ≥ 0
	Role         string   // optional: as Card.Role
	Capabilities []string // as Card.Capabilities
}

// Presence is a node's signed statement of its agents' states, sent only to
// its contacts (selective exposure: everyone else sees only public cards).
type Presence struct {
	Peer   peer.ID      // the node (Ed25519 peer ID) that signs the message
	Seq    uint64       // ≥ 1, increasing per Peer; receivers drop a seq ≤ the last one seen
	Time   int64        // sender's clock at sealing, unix milliseconds, ≥ 0
	Agents []AgentState // ≤ MaxAgents, sorted by Agent, unique
}

// presencePayload is the signed CBOR form of a Presence.
type presencePayload struct {
	V      uint64       `cbor:"1,keyasint,omitempty"`
	Peer   []byte       `cbor:"2,keyasint,omitempty"`
	Seq    uint64       `cbor:"3,keyasint,omitempty"`
	Time   int64        `cbor:"4,keyasint,omitempty"`
	Agents []agentState `cbor:"5,keyasint,omitempty"`
}

// agentState is the CBOR form of an AgentState.
type agentState struct {
	Agent     string   `cbor:"1,keyasint,omitempty"`
	State     string   `cbor:"2,keyasint,omitempty"`
	WorkingOn string   `cbor:"3,keyasint,omitempty"`
	LastSeen  int64    `cbor:"4,keyasint,omitempty"`
	Role      string   `cbor:"5,keyasint,omitempty"`
	Caps      []string `cbor:"6,keyasint,omitempty"`
}

func (p *Presence) payload() presencePayload {
	w := presencePayload{V: PresenceVersion, Peer: []byte(p.Peer), Seq: p.Seq, Time: p.Time}
	if len(p.Agents) > 0 {
		w.Agents = make([]agentState, len(p.Agents))
		for i, a := range p.Agents {
			w.Agents[i] = agentState{
				Agent:     string(a.Agent),
				State:     string(a.State),
				WorkingOn: a.WorkingOn,
				LastSeen:  a.LastSeen,
				Role:      a.Role,
				Caps:      a.Capabilities,
			}
		}
	}
	return w
}

func (w *presencePayload) presence() (*Presence, error) {
	if w.V != PresenceVersion {
		return nil, fmt.Errorf("%w: presence version %d", ErrBadVersion, w.V)
	}
	id, err := peer.IDFromBytes(w.Peer)
	if err != nil {
		return nil, fmt.Errorf("%w: peer: %v", ErrBadPeer, err)
	}
	p := &Presence{Peer: id, Seq: w.Seq, Time: w.Time}
	if len(w.Agents) > 0 {
		p.Agents = make([]AgentState, len(w.Agents))
		for i, a := range w.Agents {
			p.Agents[i] = AgentState{
				Agent:        identity.AgentName(a.Agent),
				State:        State(a.State),
				WorkingOn:    a.WorkingOn,
				LastSeen:     a.LastSeen,
				Role:         a.Role,
				Capabilities: a.Caps,
			}
		}
	}
	return p, nil
}

// validate checks every rule of a presence message but its signature.
func (p *Presence) validate() error {
	if err := checkSigner(p.Peer); err != nil {
		return err
	}
	if p.Seq == 0 {
		return fmt.Errorf("%w: presence seq 0", ErrMalformed)
	}
	if p.Time < 0 {
		return fmt.Errorf("%w: negative presence time %d", ErrMalformed, p.Time)
	}
	if len(p.Agents) > MaxAgents {
		return fmt.Errorf("%w: %d agents, limit %d", ErrTooLarge, len(p.Agents), MaxAgents)
	}
	for i := range p.Agents {
		a := &p.Agents[i]
		if i > 0 && p.Agents[i-1].Agent >= a.Agent {
			return fmt.Errorf("%w: agents not sorted and unique at %d", ErrMalformed, i)
		}
		if err := a.validate(); err != nil {
			return fmt.Errorf("agent %d: %w", i, err)
		}
	}
	return nil
}

func (a *AgentState) validate() error {
	if _, err := identity.ParseAgentName(string(a.Agent)); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !a.State.known() {
		return fmt.Errorf("%w: state %.40q", ErrMalformed, a.State)
	}
	if len(a.WorkingOn) > utf8.UTFMax*MaxWorkingOn || utf8.RuneCountInString(a.WorkingOn) > MaxWorkingOn {
		return fmt.Errorf("%w: working_on is over %d characters", ErrTooLarge, MaxWorkingOn)
	}
	if err := checkChars(a.WorkingOn, true); err != nil {
		return fmt.Errorf("%w: working_on: %v", ErrMalformed, err)
	}
	if a.LastSeen < 0 {
		return fmt.Errorf("%w: negative last_seen %d", ErrMalformed, a.LastSeen)
	}
	if err := checkLine(a.Role, MaxText, "role"); err != nil {
		return err
	}
	return checkCapabilities(a.Capabilities)
}

// SealPresence signs p with priv (domain identity.DomainPresence) and
// returns its wire bytes, at most MaxPresenceWire long. p.Peer must be
// priv's peer ID; p.Agents sorted by Agent and unique, each with sorted
// unique Capabilities. SealPresence refuses what DecodePresence would.
func SealPresence(priv crypto.PrivKey, p *Presence) ([]byte, error) {
	wire, err := sealPresence(priv, p)
	if err != nil {
		return nil, fmt.Errorf("discovery: seal presence: %w", err)
	}
	return wire, nil
}

func sealPresence(priv crypto.PrivKey, p *Presence) ([]byte, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil presence", ErrMalformed)
	}
	if err := checkSelf(priv, p.Peer); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return seal(priv, identity.DomainPresence, p.payload(), MaxPresenceWire)
}

// DecodePresence checks and decodes a presence message's wire bytes. It
// refuses input over MaxPresenceWire bytes before decoding, any encoding but
// the canonical one, unknown versions, broken limits, and a signature that
// is not Presence.Peer's. The caller must also check that Peer is the remote
// peer of the stream it came on, that Peer is a contact, and that Seq is
// above the last one it accepted from Peer. The result shares no memory
// with wire; empty lists decode as nil.
func DecodePresence(wire []byte) (*Presence, error) {
	p, err := decodePresence(wire)
	if err != nil {
		return nil, fmt.Errorf("discovery: decode presence: %w", err)
	}
	return p, nil
}

func decodePresence(wire []byte) (*Presence, error) {
	if len(wire) > MaxPresenceWire {
		return nil, fmt.Errorf("%w: presence is %d bytes, limit %d", ErrTooLarge, len(wire), MaxPresenceWire)
	}
	var s signedWire
	if err := unmarshalCanonical(presenceDec, wire, &s); err != nil {
		return nil, fmt.Errorf("wire: %w", err)
	}
	var w presencePayload
	if err := unmarshalCanonical(presenceDec, s.Payload, &w); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	p, err := w.presence()
	if err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if err := identity.Verify(p.Peer, identity.DomainPresence, s.Payload, s.Sig); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return p, nil
}
