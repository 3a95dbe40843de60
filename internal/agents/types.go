package agents

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// RegisterRequest registers (or updates) a local agent session.
type RegisterRequest struct {
	Name         string   `json:"name"`                   // identity.AgentName; trimmed and lower-cased
	Role         string   `json:"role,omitempty"`         // one line, ≤ 64 bytes
	WorkingOn    string   `json:"working_on,omitempty"`   // ≤ 500 characters, contacts only
	Capabilities []string `json:"capabilities,omitempty"` // each 1–64 of [a-z0-9._-] once lower-cased
	Client       string   `json:"client,omitempty"`       // e.g. "claude-code", one line, ≤ 64 bytes
	Session      string   `json:"session,omitempty"`      // the client's session ID, ≤ 256 bytes
	ClientPID    int      `json:"client_pid,omitempty"`   // the client program's process on this machine, if known
	TTLSeconds   int      `json:"ttl_seconds,omitempty"`  // 0: the node's default (60 s)
	// Connection is the registering connection's token (one run of an
	// MCP server), "" for none: UnregisterOf of another connection leaves
	// the registration as it is.
	Connection string `json:"connection,omitempty"`
}

// HeartbeatRequest keeps a local agent alive; nil fields are left as they
// are.
type HeartbeatRequest struct {
	State     *string `json:"state,omitempty"`      // "idle" or "busy"
	WorkingOn *string `json:"working_on,omitempty"` // "" clears it
	// Session, when set, renews the agent only while that session holds
	// the name: another session's agent of it is left as it is, and the
	// heartbeat fails with ErrNameTaken.
	Session string `json:"session,omitempty"`
}

// Info is one local agent as the local API shows it.
type Info struct {
	Name         string    `json:"name"`
	Role         string    `json:"role"`
	WorkingOn    string    `json:"working_on"`
	Capabilities []string  `json:"capabilities"`
	Client       string    `json:"client"`
	Session      string    `json:"session"`
	ClientPID    int       `json:"client_pid,omitempty"`
	State        string    `json:"state"`
	LastSeen     time.Time `json:"last_seen"`
	Expires      time.Time `json:"expires"` // when it is swept without a heartbeat
}

// WhoEntry is one live agent: a local one, or a contact's.
type WhoEntry struct {
	PeerID       string    `json:"peer_id"`
	Handle       string    `json:"handle"`
	Agent        string    `json:"agent"`
	State        string    `json:"state"`
	WorkingOn    string    `json:"working_on"`
	LastSeen     time.Time `json:"last_seen"`
	Local        bool      `json:"local"`
	Role         string    `json:"role"`
	Capabilities []string  `json:"capabilities"`
}

// CardView is a public agent card found through the DHT.
type CardView struct {
	PeerID       string    `json:"peer_id"`
	Handle       string    `json:"handle"`
	Agent        string    `json:"agent"`
	Capabilities []string  `json:"capabilities"`
	Client       string    `json:"client"`
	Expires      time.Time `json:"expires"`
	// Member is the membership certificate the card carries, unchecked.
	Member []byte `json:"-"`
}

// Found is what a Search found: the cards kept, and how many it left out
// over each of its limits.
type Found struct {
	Cards []CardView
	// LeftOutPerNode counts the cards left out because their node, not
	// this node nor a contact, had handed out maxCardsPerPeer already.
	LeftOutPerNode int
	// LeftOutInAll counts the cards left out because maxFound were kept
	// (strangers' give their places to this node's and its contacts').
	LeftOutInAll int
}

// Contact is a peer with an active contact.
type Contact struct {
	Peer   peer.ID
	Handle string
	// Presence: the contact's certificate grants the presence scope
	// (consent.ScopePresence): each node sees what the other's agents
	// work on. Presence goes only to, and is taken only from, such.
	Presence bool
}

// jsonTime is how times appear in the API: UTC, millisecond precision
// (RFC 3339).
func jsonTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// orEmpty returns s, or an empty (not nil) slice, so JSON shows [].
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return append([]string(nil), s...)
}
