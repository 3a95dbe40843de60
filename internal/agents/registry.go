package agents

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/identity"
)

// Limits of a registration.
const (
	// MaxTTL is the longest TTL a registration may ask for.
	MaxTTL = 7 * 24 * time.Hour
	// MaxSession is the longest session ID, in bytes.
	MaxSession = 256
)

// local is one registered agent session.
type local struct {
	Name      identity.AgentName
	Role      string
	WorkingOn string
	Caps      []string
	Client    string
	Session   string
	ClientPID int // the client program's process, 0 if not known
	// Connection is the registering connection's token, "" for none.
	Connection string
	State      discovery.State
	LastSeen   time.Time
	TTL        time.Duration
}

func (a *local) expires() time.Time { return a.LastSeen.Add(a.TTL) }

func (a *local) live(now time.Time) bool { return now.Before(a.expires()) }

// sameCard reports whether a and b have the same public card fields.
func (a *local) sameCard(b *local) bool {
	return a.Role == b.Role && a.Client == b.Client && slices.Equal(a.Caps, b.Caps)
}

func (a *local) info() Info {
	return Info{
		Name: string(a.Name), Role: a.Role, WorkingOn: a.WorkingOn, Capabilities: orEmpty(a.Caps),
		Client: a.Client, Session: a.Session, ClientPID: a.ClientPID, State: string(a.State),
		LastSeen: jsonTime(a.LastSeen), Expires: jsonTime(a.expires()),
	}
}

func (a *local) state() discovery.AgentState {
	return discovery.AgentState{
		Agent: a.Name, State: a.State, WorkingOn: a.WorkingOn, LastSeen: a.LastSeen.UnixMilli(),
		Role: a.Role, Capabilities: a.Caps,
	}
}

// change says what a registry operation changed.
type change struct {
	card     bool // the public card (new agent, role, capabilities, client)
	presence bool // what contacts see (anything but last_seen alone)
}

// registry holds the local agents. It is pure (every method takes the
// time) and not safe for concurrent use: Service guards it with its mutex.
type registry struct {
	agents map[identity.AgentName]*local
}

func newRegistry() registry { return registry{agents: make(map[identity.AgentName]*local)} }

// get returns the live agent name, or nil.
func (r *registry) get(name identity.AgentName, now time.Time) *local {
	a := r.agents[name]
	if a == nil || !a.live(now) {
		return nil
	}
	return a
}

// register adds or updates a (already checked by checkAgent). It fails if
// the name is held by a different live session, or if the node is full.
func (r *registry) register(a *local, now time.Time) (change, error) {
	old := r.agents[a.Name]
	if old != nil && old.live(now) {
		if old.Session != a.Session {
			return change{}, fmt.Errorf("%w: %q is registered by another session (client %q), live: it ends at %s unless that session renews it (unregister it, or use another name)",
				ErrNameTaken, a.Name, old.Client, old.expires().UTC().Format(time.RFC3339))
		}
		a.State = old.State
		if a.ClientPID == 0 {
			// A re-registration that does not know the client's process
			// (parley agent register --session, which the local API gives
			// no PID) keeps the one the session's MCP server told.
			a.ClientPID = old.ClientPID
		}
		if a.Connection == "" {
			// One made without a connection (a hook, the Codex adapter,
			// parley run, parley agent register --session) renews the
			// registration of the connection that holds it: only that
			// connection's end unregisters it, not an older one's.
			a.Connection = old.Connection
		}
		r.agents[a.Name] = a
		return change{card: !old.sameCard(a), presence: !old.sameCard(a) || old.WorkingOn != a.WorkingOn}, nil
	}
	if old == nil && r.count(now) >= discovery.MaxAgents {
		return change{}, fmt.Errorf("%w: %d live agents (unregister one first)", ErrTooManyAgents, discovery.MaxAgents)
	}
	r.agents[a.Name] = a
	return change{card: true, presence: true}, nil
}

// heartbeat renews name and applies req (already checked).
func (r *registry) heartbeat(name identity.AgentName, state *discovery.State, workingOn *string, now time.Time) (*local, change, error) {
	a := r.get(name, now)
	if a == nil {
		return nil, change{}, fmt.Errorf("%w: %q is not registered on this node (never registered, or its registration lapsed: register it)", ErrUnknownAgent, name)
	}
	var ch change
	a.LastSeen = now
	if state != nil && *state != a.State {
		a.State, ch.presence = *state, true
	}
	if workingOn != nil && *workingOn != a.WorkingOn {
		a.WorkingOn, ch.presence = *workingOn, true
	}
	return a, ch, nil
}

// remove deletes name; it reports whether a live agent was removed.
func (r *registry) remove(name identity.AgentName, now time.Time) bool {
	a := r.agents[name]
	delete(r.agents, name)
	return a != nil && a.live(now)
}

// sweep removes the expired agents and returns their names and the next
// expiry (zero if none is left).
func (r *registry) sweep(now time.Time) (gone []identity.AgentName, next time.Time) {
	for name, a := range r.agents {
		if !a.live(now) {
			delete(r.agents, name)
			gone = append(gone, name)
			continue
		}
		if e := a.expires(); next.IsZero() || e.Before(next) {
			next = e
		}
	}
	slices.Sort(gone)
	return gone, next
}

// list returns the live agents sorted by name.
func (r *registry) list(now time.Time) []*local {
	out := make([]*local, 0, len(r.agents))
	for _, a := range r.agents {
		if a.live(now) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *local) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}

func (r *registry) count(now time.Time) int {
	n := 0
	for _, a := range r.agents {
		if a.live(now) {
			n++
		}
	}
	return n
}

// ParseName reads s as an agent name a person or a client gives: trimmed,
// capitals A to Z taken as small letters (identity.ParseGivenAgentName,
// the rule every call that names an agent of this node follows).
func ParseName(s string) (identity.AgentName, error) {
	n, err := identity.ParseGivenAgentName(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return n, nil
}

// ParseState reads a state a session may set: idle or busy.
func ParseState(s string) (discovery.State, error) {
	switch st := discovery.State(strings.ToLower(strings.TrimSpace(s))); st {
	case discovery.StateIdle, discovery.StateBusy:
		return st, nil
	}
	return "", fmt.Errorf("%w: state %.40q: use idle or busy", ErrBadInput, s)
}

// normCaps lower-cases, trims, sorts and de-duplicates capabilities.
func normCaps(caps []string) []string {
	if len(caps) == 0 {
		return nil
	}
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		out = append(out, strings.ToLower(strings.TrimSpace(c)))
	}
	return discovery.SortCapabilities(out)
}

// reserved refuses the user's own name, identity.HumanAgent, for an agent.
func reserved(name identity.AgentName) error {
	if name == identity.HumanAgent {
		return fmt.Errorf("%w: %q is you, the user of this node, in every room and inbox: an agent cannot take it (choose another name)",
			ErrReservedName, name)
	}
	return nil
}

// newLocal turns a request into an agent, checked against the card and
// presence rules by sealing both with the node's key (so the rules live in
// one place, the discovery package). Every registration (the CLI, the
// local API, a session's binding) comes through here.
func newLocal(priv crypto.PrivKey, self peer.ID, req RegisterRequest, defTTL time.Duration, now time.Time) (*local, error) {
	name, err := ParseName(req.Name)
	if err != nil {
		return nil, err
	}
	if err := reserved(name); err != nil {
		return nil, err
	}
	ttl := defTTL
	switch {
	case req.TTLSeconds < 0:
		return nil, fmt.Errorf("%w: ttl_seconds %d is negative", ErrBadInput, req.TTLSeconds)
	case time.Duration(req.TTLSeconds) > MaxTTL/time.Second:
		return nil, fmt.Errorf("%w: ttl_seconds %d is more than %d (%s)", ErrBadInput, req.TTLSeconds, int(MaxTTL/time.Second), MaxTTL)
	case req.TTLSeconds > 0:
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	if err := checkSession(req.Session); err != nil {
		return nil, err
	}
	if req.ClientPID < 0 {
		return nil, fmt.Errorf("%w: client_pid %d is negative", ErrBadInput, req.ClientPID)
	}
	a := &local{
		Name: name, Role: strings.TrimSpace(req.Role), WorkingOn: strings.TrimSpace(req.WorkingOn),
		Caps: normCaps(req.Capabilities), Client: strings.TrimSpace(req.Client), Session: req.Session,
		ClientPID: req.ClientPID, Connection: req.Connection, State: discovery.StateIdle, LastSeen: now, TTL: ttl,
	}
	if err := checkAgent(priv, self, a); err != nil {
		return nil, err
	}
	return a, nil
}

// checkAgent checks a's card and presence fields by sealing them.
func checkAgent(priv crypto.PrivKey, self peer.ID, a *local) error {
	if len(a.Caps) > discovery.MaxCapabilities {
		return fmt.Errorf("%w: %d capabilities, at most %d", ErrBadInput, len(a.Caps), discovery.MaxCapabilities)
	}
	c := discovery.Card{Peer: self, Agent: a.Name, Role: a.Role, Capabilities: a.Caps, Client: a.Client, Seq: 1, Expires: 1}
	if _, err := discovery.SealCard(priv, &c); err != nil {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	return checkWorkingOn(priv, self, a.Name, a.WorkingOn)
}

func checkWorkingOn(priv crypto.PrivKey, self peer.ID, name identity.AgentName, w string) error {
	if utf8.RuneCountInString(w) > discovery.MaxWorkingOn {
		return fmt.Errorf("%w: working_on has %d characters, at most %d", ErrBadInput, utf8.RuneCountInString(w), discovery.MaxWorkingOn)
	}
	p := discovery.Presence{Peer: self, Seq: 1, Agents: []discovery.AgentState{{Agent: name, State: discovery.StateIdle, WorkingOn: w}}}
	if _, err := discovery.SealPresence(priv, &p); err != nil {
		return fmt.Errorf("%w: working_on: %v", ErrBadInput, err)
	}
	return nil
}

func checkSession(s string) error {
	if len(s) > MaxSession {
		return fmt.Errorf("%w: session is %d bytes, at most %d", ErrBadInput, len(s), MaxSession)
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return fmt.Errorf("%w: session %.40q has control characters or is not UTF-8", ErrBadInput, s)
	}
	return nil
}

// record is how a registration is stored (schema.LocalAgent).
type record struct {
	Name      string   `json:"name"`
	Role      string   `json:"role,omitempty"`
	WorkingOn string   `json:"working_on,omitempty"`
	Caps      []string `json:"caps,omitempty"`
	Client    string   `json:"client,omitempty"`
	Session   string   `json:"session,omitempty"`
	ClientPID int      `json:"client_pid,omitempty"`
	Conn      string   `json:"connection,omitempty"`
	State     string   `json:"state"`
	LastSeen  int64    `json:"last_seen_ms"`
	TTL       int64    `json:"ttl_ms"`
}

func (a *local) marshal() []byte {
	b, _ := json.Marshal(record{
		Name: string(a.Name), Role: a.Role, WorkingOn: a.WorkingOn, Caps: a.Caps, Client: a.Client,
		Session: a.Session, ClientPID: a.ClientPID, Conn: a.Connection, State: string(a.State), LastSeen: a.LastSeen.UnixMilli(), TTL: a.TTL.Milliseconds(),
	})
	return b
}

// unmarshalLocal reads a stored registration and checks it as a new one.
func unmarshalLocal(priv crypto.PrivKey, self peer.ID, b []byte) (*local, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	name, err := identity.ParseAgentName(r.Name)
	if err != nil {
		return nil, err
	}
	if err := reserved(name); err != nil { // registered before the name was reserved
		return nil, err
	}
	st := discovery.State(r.State)
	if st != discovery.StateIdle && st != discovery.StateBusy {
		return nil, fmt.Errorf("state %q", r.State)
	}
	if r.TTL <= 0 || time.Duration(r.TTL)*time.Millisecond > MaxTTL {
		return nil, fmt.Errorf("ttl %d ms", r.TTL)
	}
	a := &local{
		Name: name, Role: r.Role, WorkingOn: r.WorkingOn, Caps: r.Caps, Client: r.Client, Session: r.Session,
		ClientPID: max(r.ClientPID, 0), Connection: r.Conn, State: st, LastSeen: time.UnixMilli(r.LastSeen), TTL: time.Duration(r.TTL) * time.Millisecond,
	}
	if err := checkSession(a.Session); err != nil {
		return nil, err
	}
	if err := checkAgent(priv, self, a); err != nil {
		return nil, err
	}
	return a, nil
}
