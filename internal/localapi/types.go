package localapi

import "time"

// The local API's vocabulary: every request and response of the API, as
// plain structs of strings, numbers, times and lists. They hold no domain
// type (peer IDs, event IDs and room IDs are strings), so the CLI, `parley
// mcp` and any other client import this package alone.

// Node.

// Info names the node.
type Info struct {
	PeerID string   `json:"peer_id"`
	Handle string   `json:"handle"`
	Addrs  []string `json:"addrs"`
	// RelayAddrs are the node's addresses through the relays it holds a
	// reservation on (RELAY_ADDR/p2p/RELAY/p2p-circuit/p2p/SELF): the ones
	// to give others when it is not reachable directly ([] without one).
	RelayAddrs []string `json:"relay_addrs"`
	// Org is the node's live membership certificate, shown on its card;
	// null without one.
	Org *Membership `json:"org"`
}

// Status is a summary of the running node.
type Status struct {
	Info
	Home       string    `json:"home"`
	Version    string    `json:"version"`
	Started    time.Time `json:"started"`
	UptimeSec  float64   `json:"uptime_seconds"`
	Peers      int       `json:"peers"`
	DHTPeers   int       `json:"dht_routing_table"`
	PubSubPeer int       `json:"pubsub_peers"`
	MDNS       bool      `json:"mdns"`
	// Reachability is what AutoNAT found: public, private (behind a NAT)
	// or unknown.
	Reachability string `json:"reachability"`
	// RelayService is "off", or "on (contacts and room members)" or "open
	// (every peer)" followed by whether the service runs ("serving", or
	// "NOT SERVING" and why) and, when AutoNAT finds the node behind a
	// NAT, that only peers that reach it directly can use it.
	RelayService string `json:"relay_service"`
	// Relays are the node's own reservations: each relay it holds one on,
	// each configured relay, and any that refused one.
	Relays []RelayInfo `json:"relays"`
	// Direct counts peers connected directly; Relayed lists those reached
	// only through a relay, each with why.
	Direct  int    `json:"direct"`
	Relayed []Peer `json:"relayed"`
	// Unreached counts owed items (asks, invitations) no wake-up route got
	// its agent to read in time: the human should look (parley who).
	Unreached int `json:"unreached"`
	// HumanOwed counts the asks and invitations waiting for this node's
	// human (parley inbox lists them).
	HumanOwed int `json:"human_owed"`
	// HumanAsks and HumanInvitations are HumanOwed's two parts.
	HumanAsks        int `json:"human_asks"`
	HumanInvitations int `json:"human_invitations"`
	// ContactRequests counts the requests to be contacts that wait for
	// the user's approval (parley contact list and parley inbox list them).
	ContactRequests int `json:"contact_requests"`
	// StoreProblem says why the node's database refuses writes, when it
	// does: a failed write (restart the node) or a nearly full disk.
	StoreProblem string `json:"store_problem,omitempty"`
}

// RelayInfo is the node's reservation on one relay.
type RelayInfo struct {
	PeerID     string `json:"peer_id"`
	Configured bool   `json:"configured"` // a relay = line of the config
	// State is "held" (the relay holds a reservation for the node until
	// Expires, renewed 2 minutes before, and Addrs are the node's
	// addresses through it, to give out), "failed" (Error says why, at
	// FailedAt; RetryAt is when it is asked again, none: as soon as it can
	// be reached), "waiting" (a configured relay not asked yet: the node
	// does not know yet that it is behind a NAT) or "not needed" (the node
	// is reachable directly).
	State    string    `json:"state"`
	Addrs    []string  `json:"addrs,omitempty"` // the relayed addresses to give out
	Expires  time.Time `json:"expires,omitzero"`
	Error    string    `json:"error,omitempty"`
	FailedAt time.Time `json:"failed_at,omitzero"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
}

// Peer is a connected peer.
type Peer struct {
	PeerID string   `json:"peer_id"`
	Handle string   `json:"handle"` // its user's handle, when known ("" when not)
	Name   string   `json:"name"`   // how it shows (handle, or handle~SUFFIX; "" when not known)
	Addrs  []string `json:"addrs"`
	// Conn is "direct" or "relayed" (empty when unknown); Relay names the
	// relay of a relayed connection and Why says why it is relayed, or how
	// the direct one came.
	// Every key is there, empty ("" or null) when it does not apply.
	Conn  string `json:"conn"`
	Relay string `json:"relay"`
	Why   string `json:"why"`
	// Org is the organisation membership its card shows, checked (null
	// without one).
	Org *Membership `json:"org"`
}

// ConnectRequest asks the node to dial an address.
type ConnectRequest struct {
	Addr string `json:"addr"`
}

// Agents: registrations, sessions, presence, cards.

// RegisterAgentRequest registers or updates a local agent.
type RegisterAgentRequest struct {
	Name         string   `json:"name"`                   // 1–64 of a-z 0-9 . _ -
	Role         string   `json:"role,omitempty"`         // one line, ≤ 64 bytes
	WorkingOn    string   `json:"working_on,omitempty"`   // ≤ 500 characters, contacts only
	Capabilities []string `json:"capabilities,omitempty"` // each 1–64 of [a-z0-9._-]
	Client       string   `json:"client,omitempty"`       // e.g. "claude-code"
	Session      string   `json:"session,omitempty"`      // the client's session ID, ≤ 256 bytes
	TTLSeconds   int      `json:"ttl_seconds,omitempty"`  // 0: the node's default (60 s)
}

// HeartbeatRequest keeps a local agent alive; nil fields are left as they
// are.
type HeartbeatRequest struct {
	State     *string `json:"state,omitempty"`      // "idle" or "busy"
	WorkingOn *string `json:"working_on,omitempty"` // "" clears it
	// Session, when set, renews the agent only while that session holds
	// its name: another session's agent of the name is left as it is,
	// and the heartbeat is refused (CodeNameTaken).
	Session string `json:"session,omitempty"`
}

// SessionRequest binds an agent session (a client's session key) to an
// agent of the node and registers it. The session's name and card are
// kept by the node, so a session that reconnects gets them back: nil
// fields keep what the session had (or the defaults for a new session).
type SessionRequest struct {
	Session      string    `json:"session"`                // the client's session key, ≤ 256 bytes
	Name         string    `json:"name,omitempty"`         // rename the session's agent
	Fallback     string    `json:"fallback,omitempty"`     // the name of a new session (made unique)
	Client       string    `json:"client,omitempty"`       // the client program, e.g. "claude-code"
	ClientPID    int       `json:"client_pid,omitempty"`   // the client program's process on this machine (the MCP server's parent)
	Role         *string   `json:"role,omitempty"`         // one line
	WorkingOn    *string   `json:"working_on,omitempty"`   // one line, contacts only
	Capabilities *[]string `json:"capabilities,omitempty"` // replaces the list
	TTLSeconds   int       `json:"ttl_seconds,omitempty"`  // registration lifetime without a heartbeat
	// Connection is the binding connection's token (one run of an MCP
	// server): the node unregisters the agent at that connection's end
	// (a DELETE with ConnectionHeader) only while the registration is
	// still this connection's.
	Connection string `json:"connection,omitempty"`
}

// AgentInfo is a local agent.
type AgentInfo struct {
	Name         string    `json:"name"`
	Address      string    `json:"address"` // NAME@PEER_ID
	Role         string    `json:"role"`
	WorkingOn    string    `json:"working_on"`
	Capabilities []string  `json:"capabilities"`
	Client       string    `json:"client"`
	Session      string    `json:"session"`
	ClientPID    int       `json:"client_pid,omitempty"` // the client program's process, when its MCP server said
	State        string    `json:"state"`
	LastSeen     time.Time `json:"last_seen"`
	Expires      time.Time `json:"expires"` // when it is swept without a heartbeat
}

// ProcessRequest names a process and its ancestors, nearest first
// (procs.Ancestors of a command's own process), to learn which local
// agent's client runs it.
type ProcessRequest struct {
	PIDs []int `json:"pids"` // at most MaxProcessChain
}

// MaxProcessChain is the most PIDs a ProcessRequest may name.
const MaxProcessChain = 64

// ProcessAgents are the live local agents whose client program is PID, the
// first process of a ProcessRequest that is any agent's client; none: PID 0
// and no agents.
type ProcessAgents struct {
	PID    int      `json:"pid"`
	Agents []string `json:"agents"`
}

// WhoEntry is a live agent, local or a contact's.
type WhoEntry struct {
	PeerID string `json:"peer_id"`
	Handle string `json:"handle"`
	// Name is how the node reads (the names service's name: its handle,
	// or handle~SUFFIX when another node's handle reads the same). Print
	// it, not Handle; empty from a node without a names service.
	Name         string    `json:"name,omitempty"`
	Agent        string    `json:"agent"`
	Address      string    `json:"address"` // NAME@PEER_ID
	State        string    `json:"state"`
	WorkingOn    string    `json:"working_on"`
	LastSeen     time.Time `json:"last_seen"`
	Local        bool      `json:"local"`
	Role         string    `json:"role"`
	Capabilities []string  `json:"capabilities"`
	Claims       []Claim   `json:"claims,omitempty"` // what it holds on the boards this node sees
	// Unreached (local agents) counts owed items no wake-up route got it
	// to read in time.
	Unreached int `json:"unreached,omitempty"`
}

// FindResult is what a search found: the cards kept, and how many it left
// out over each of its limits.
type FindResult struct {
	Cards []CardView `json:"cards"`
	// LeftOutPerNode counts cards left out because their node (neither
	// this node nor a contact) had given the most a search keeps of one
	// node already (16).
	LeftOutPerNode int `json:"left_out_per_node"`
	// LeftOutInAll counts cards left out because the search kept the most
	// it keeps in all (256), this node's and its contacts' first.
	LeftOutInAll int `json:"left_out_in_all"`
}

// CardView is a public agent card found through the DHT.
type CardView struct {
	PeerID string `json:"peer_id"`
	Handle string `json:"handle"` // as the card tells it
	// Name is how the node reads (names.Service.NameOf: its name when this
	// node knows it; else the card's handle, with the tail of its peer ID
	// when it reads like a known node's or this node's). Print it, not
	// Handle; empty from a node without a names service.
	Name         string    `json:"name,omitempty"`
	Agent        string    `json:"agent"`
	Address      string    `json:"address"` // NAME@PEER_ID
	Capabilities []string  `json:"capabilities"`
	Client       string    `json:"client"`
	Expires      time.Time `json:"expires"`
	// Contact is whether the card's node is this node or an active
	// contact of it. A handle names only nodes this node knows, so the
	// agents of a node that is no contact are addressed NAME@PEER_ID.
	Contact bool `json:"contact,omitempty"`
	// Org is the organisation membership the card shows, checked by this
	// node; absent without one.
	Org *Membership `json:"org,omitempty"`
}

// Contacts.

// ContactRequest asks a node to become a contact.
type ContactRequest struct {
	Target string `json:"target"` // peer ID, or multiaddr ending in /p2p/PEER_ID
	Note   string `json:"note,omitempty"`
}

// ContactApproveRequest approves a pending request.
type ContactApproveRequest struct {
	ID      string `json:"id"`                // request ID, or the requester's peer ID
	Expires string `json:"expires,omitempty"` // validity: "90d", "36h"; empty: a year
}

// ContactRef names a contact: a request ID or a peer ID.
type ContactRef struct {
	ID     string `json:"id,omitempty"`
	PeerID string `json:"peer_id,omitempty"`
}

// Ref is the peer ID if set, else the ID.
func (r ContactRef) Ref() string {
	if r.PeerID != "" {
		return r.PeerID
	}
	return r.ID
}

// ContactEntry is one contact or pending request.
type ContactEntry struct {
	ID     string `json:"id"`      // the request that made or last changed the contact
	PeerID string `json:"peer_id"` // the other node
	Handle string `json:"handle"`  // as the node told it (its request, its approval)
	// Name is how the node reads everywhere (the names service's: its
	// handle, or handle~SUFFIX when another node's handle reads the same,
	// so a stranger asking under a contact's handle does not read as the
	// contact; …SUFFIX, the last 8 characters of its peer ID, while no
	// handle of the node is known). Print it, not Handle: Handle is as the
	// node told it, characters that show nothing included.
	Name    string     `json:"name,omitempty"`
	State   string     `json:"state"`   // pending-in, pending-out, active, denied, revoked, expired
	Note    string     `json:"note"`    // the pending request's note
	Expires *time.Time `json:"expires"` // the certificate's end, null without one
	// Scopes is what the certificate grants (ask, invite, presence).
	Scopes []string `json:"scopes,omitempty"`
	// Org is set for a contact made through organisation trust: the
	// ORGKEY of the organisation whose trust approved it.
	Org string `json:"org,omitempty"`
}

// ContactResult is the outcome of a request, approval, denial or revocation.
type ContactResult struct {
	ContactEntry
	Delivered bool   `json:"delivered"`
	Detail    string `json:"detail,omitempty"`
}

// Rooms.

// RoomInfo describes a room this node is in.
type RoomInfo struct {
	RoomID    string    `json:"room_id"`
	Name      string    `json:"name"`
	Purpose   string    `json:"purpose"`
	Creator   string    `json:"creator"`
	Members   []string  `json:"members"` // member nodes' peer IDs
	Agents    []string  `json:"agents"`  // member agents, NAME@PEER_ID
	Events    uint64    `json:"events"`
	Heads     int       `json:"heads"`
	InvitedBy string    `json:"invited_by,omitempty"`
	Opened    time.Time `json:"opened"`
}

// Event is one event of a room, as stored.
type Event struct {
	ID      string `json:"id"`
	Room    string `json:"room"`
	Author  string `json:"author_peer"`
	Agent   string `json:"agent"`
	From    string `json:"from"` // agent@author_peer
	Seq     uint64 `json:"seq"`
	Depth   uint64 `json:"depth"`
	Kind    string `json:"kind"` // create, invite, join, leave, message, ask
	Text    string `json:"text"` // message and ask text; create: the room's name
	Purpose string `json:"purpose,omitempty"`
	ReplyTo string `json:"reply_to,omitempty"`
	To      string `json:"to,omitempty"`     // ask or message: its addressee; invite: the invited agent
	Target  string `json:"target,omitempty"` // invite: the invited node; leave: the node that is out
	Time    int64  `json:"time"`             // unix milliseconds, the author's clock
}

// RemoveRequest takes a member node, or one agent of another node, out of
// a room (its creator only).
type RemoveRequest struct {
	// PeerID is the node to take out, or an agent: NAME@PEER_ID or
	// NAME@HANDLE (only that agent goes; its node stays a member).
	PeerID string `json:"peer_id"`
	Agent  string `json:"agent,omitempty"` // who removes it (default human)
}

// EventID names a posted event.
type EventID struct {
	ID string `json:"id"`
}

// Agent calls: what an agent does through its node. Each request names no
// agent (the path does); Take asks for the agent's pending items in the same
// answer, which hands them out. A call made with TwoStep (the Parley-Hand
// header) hands them out in two steps: the answer's Pending.Hand is then to
// be confirmed (Ack) once the items reached the agent, or they are offered
// again.

// OpenRoomRequest creates a room and brings members in.
type OpenRoomRequest struct {
	Name    string `json:"name"`
	Purpose string `json:"purpose,omitempty"` // one line
	// Members are invited as the room opens, at most MaxOpenMembers:
	// NAME@PEER_ID, NAME (an agent of this node) or PEER_ID.
	Members []string `json:"members,omitempty"`
	Take    bool     `json:"take,omitempty"`
}

// OpenRoomResult is the room opened, who was invited and who could not be.
type OpenRoomResult struct {
	RoomRef
	Invited []string  `json:"invited"`
	Failed  []Failure `json:"failed"`
	// Notes say which invited agents could not be checked: their node
	// tells this node nothing of its agents.
	Notes   []string `json:"notes,omitempty"`
	Pending Pending  `json:"pending"`
}

// Failure is one member that could not be brought in, and why.
type Failure struct {
	Member string `json:"member"`
	Error  string `json:"error"`
}

// RoomRef names a room for an agent: its ID, name and purpose.
type RoomRef struct {
	RoomID  string `json:"room_id"`
	Name    string `json:"name"`
	Purpose string `json:"purpose"`
}

// InviteRequest brings a member into a room: an agent NAME@PEER_ID (or NAME
// of this node), or a node by its PEER_ID.
type InviteRequest struct {
	Room   string `json:"room"`
	Member string `json:"member"`
	Take   bool   `json:"take,omitempty"`
}

// SayRequest posts a message, or an ask.
// Spend is what an agent's client says the agent spent since its last
// report: tokens in and out, cost in US dollars. Each is optional; none is
// ever guessed.
type Spend struct {
	TokensIn  *int64   `json:"tokens_in,omitempty"`
	TokensOut *int64   `json:"tokens_out,omitempty"`
	CostUSD   *float64 `json:"cost_usd,omitempty"`
	// The part of TokensIn read from and written to a prompt cache.
	CacheReadTokens  *int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens *int64 `json:"cache_write_tokens,omitempty"`
}

type SayRequest struct {
	Room    string `json:"room"`               // room ID or the name of one room
	Text    string `json:"text"`               // not empty, ≤ 64 KiB
	ReplyTo string `json:"reply_to,omitempty"` // the event this answers
	To      string `json:"to,omitempty"`       // NAME@PEER_ID or NAME: whom it is for
	Ask     bool   `json:"ask,omitempty"`      // post an ask: owed until answered
	Take    bool   `json:"take,omitempty"`
	Spent   *Spend `json:"spent,omitempty"` // what the client reported since the agent's last call
}

// ReplyRequest answers a message or an ask by its ID, in its room.
type ReplyRequest struct {
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Take      bool   `json:"take,omitempty"`
	Spent     *Spend `json:"spent,omitempty"`
}

// Posted is a posted event.
type Posted struct {
	ID      string  `json:"id"`
	Room    RoomRef `json:"room"`
	Pending Pending `json:"pending"`
	// Already is set by an invite of a member that was in already: nothing
	// was posted, and ID is the event that let it in.
	Already bool `json:"already,omitempty"`
	// Note is set by an invite of an agent that could not be checked: its
	// node tells this node nothing of its agents, so it may not exist (and
	// by a post whose To could not be checked so); and by a post in a room
	// whose other member nodes this node's contacts all refuse now (it
	// reaches no one).
	Note string `json:"note,omitempty"`
	// Waits is set by an invite of a node that is not a contact granting
	// invites (a member of a room this node shares): the invite waits on
	// that node for its user's answer (`parley invites` there).
	Waits bool `json:"waits,omitempty"`
}

// AskRequest asks an agent (To) or a room (every member agent but the
// asker owes it) and waits up to WaitSeconds for the first reply.
type AskRequest struct {
	Text        string  `json:"text"`
	To          string  `json:"to,omitempty"`   // NAME@PEER_ID or NAME
	Room        string  `json:"room,omitempty"` // default: a room shared with To, made if needed
	WaitSeconds float64 `json:"wait_seconds,omitempty"`
	Take        bool    `json:"take,omitempty"`
	Spent       *Spend  `json:"spent,omitempty"`
}

// AskResult is an ask and its reply, if one came in time.
type AskResult struct {
	AskID   string  `json:"ask_id"`
	Room    RoomRef `json:"room"`
	Reply   *Item   `json:"reply,omitempty"`
	Pending Pending `json:"pending"`
	// Note is set when To could not be checked: its node tells this node
	// nothing of its agents, so it may not exist.
	Note string `json:"note,omitempty"`
}

// ReadRequest reads what the agent has not seen, in one room or in all its
// rooms, oldest first; or with Last the last events of one room, seen or
// not.
type ReadRequest struct {
	Room  string `json:"room,omitempty"`
	Limit int    `json:"limit,omitempty"` // default 50, at most 500
	Last  int    `json:"last,omitempty"`  // with Room: the last N events (at most 500)
	// MaxBytes, when set, bounds the page's texts together: a page stops
	// before the event that would take them past it (More says the rest
	// is unread), and with Last the oldest are left out (LeftOut). The
	// page's first event is always given, whole.
	MaxBytes int `json:"max_bytes,omitempty"`
	// ID, when set, reads that one event of a room the agent is in
	// (the agent human, the node's user: of any room the node holds),
	// whole, read or not (its whole ID, or its first 8 characters or
	// more): nothing is marked read. It goes alone (no
	// Room, Limit or Last).
	ID   string `json:"id,omitempty"`
	Take bool   `json:"take,omitempty"`
}

// ReadResult is a page of events.
type ReadResult struct {
	Messages []Item `json:"messages"`
	More     bool   `json:"more"` // more is unread: read again
	// LeftOut counts the oldest of the last events asked for (Last) left
	// out to keep the page within MaxBytes.
	LeftOut int     `json:"left_out,omitempty"`
	Pending Pending `json:"pending"`
}

// LeaveRequest takes the agent out of a room; with Node set the whole node
// leaves it. A node whose last agent leaves leaves too.
type LeaveRequest struct {
	Room string `json:"room"`
	Node bool   `json:"node,omitempty"`
	Take bool   `json:"take,omitempty"`
}

// LeaveResult says what left.
type LeaveResult struct {
	ID       string  `json:"id"`
	Room     RoomRef `json:"room"`
	NodeLeft bool    `json:"node_left"`
	Pending  Pending `json:"pending"`
}

// DismissRequest drops an ask the agent owes without answering it.
type DismissRequest struct {
	AskID string `json:"ask_id"`
	Take  bool   `json:"take,omitempty"`
}

// InvitationRequest takes the agent's invitations to a room (its ID, or
// its name) from its inbox without the rest of its pending items: what
// the dashboard does when the user opens the room or dismisses the
// invitation.
type InvitationRequest struct {
	Room string `json:"room"`
}

// InvitationResult counts the invitations taken: 0 when none waited (taken
// already, by a take, a read of the room, or another page).
type InvitationResult struct {
	Taken int `json:"taken"`
}

// AgentRequest is a call with nothing but the take flag.
type AgentRequest struct {
	Take bool `json:"take,omitempty"`
}

// WhoResult is who the agent can reach: live agents (this node's and
// contacts'), and the rooms it is in with their member agents.
type WhoResult struct {
	Agents  []WhoEntry  `json:"agents"`
	Rooms   []AgentRoom `json:"rooms"`
	Pending Pending     `json:"pending"`
}

// AgentRoom is a room an agent is in.
type AgentRoom struct {
	RoomRef
	Members []string `json:"members"` // member agents, NAME@PEER_ID
	Unread  int      `json:"unread"`  // messages it has not seen (at most what one read returns)
}

// Item is one thing for an agent: an ask it owes (kind "ask", in full the
// first time, then "reminder" with the text cut to one line), an
// invitation, the reply to its own ask, or a message of a room it is in.
type Item struct {
	Kind     string `json:"kind"` // ask, reminder, invitation, removed (from a room, by its creator), reply, message (read also shows create, invite, join, leave); board notices: claim_free, claim_expiring, claim_lost, claim_contested
	ID       string `json:"id"`
	Room     string `json:"room"`
	RoomName string `json:"room_name"`
	// RoomCreator is the room's creator node, given only when another room
	// of this node has the same name: anyone a room is shared with can make
	// a look-alike, and texts name the creator (RoomAside) to tell them apart.
	RoomCreator string   `json:"room_creator,omitempty"`
	From        string   `json:"from"` // NAME@PEER_ID
	Text        string   `json:"text"`
	ReplyTo     string   `json:"reply_to,omitempty"`
	To          string   `json:"to,omitempty"` // ask: the agent asked (empty: the room)
	Time        int64    `json:"time"`         // unix milliseconds
	Expires     int64    `json:"expires,omitempty"`
	Purpose     string   `json:"purpose,omitempty"` // invitation: the room's purpose
	Members     []string `json:"members,omitempty"` // invitation: the room's member agents
	Target      string   `json:"target,omitempty"`  // invite and leave events: the node concerned
	Paths       []string `json:"paths,omitempty"`   // board notices: the paths concerned
	Project     string   `json:"project,omitempty"` // board notices: the project
	// Brought (ask): the asker invited the agent into the room for this
	// ask (its invite just before the ask); no invitation is shown apart,
	// and Purpose and Members say what it would have.
	Brought bool `json:"brought,omitempty"`
}

// Pending is what an agent has yet to see. Items come in this order: asks
// it owes (new ones in full, then reminders), invitations, replies to its
// asks, messages (at most 10; the rest are counted in MoreUnread).
type Pending struct {
	Items      []Item      `json:"items"`
	MoreUnread []RoomCount `json:"more_unread"`
	// OwedLeftOut counts the asks the agent owes that Items leaves out:
	// reminders past the most a take lists, and asks not yet shown that
	// wait for a later take's budget. They are listed as the agent
	// answers (or dismisses) those listed.
	OwedLeftOut int `json:"owed_left_out,omitempty"`
	// Cursor marks what the agent had when this was built: a wait with it
	// as After returns once something newer arrives.
	Cursor string `json:"cursor,omitempty"`
	// Hand is set by a two-step hand-out (a call made with TwoStep) that
	// handed something out: the caller confirms it with Ack once what it
	// was handed reached whom it is for. A hand-out not confirmed within
	// the node's hand wait (30 s by default) is offered again.
	Hand string `json:"hand,omitempty"`
	// HandWaitMS is the node's hand wait in milliseconds, given with
	// Hand: a caller that holds its confirmation back (parley mcp waits
	// for a cancellation of the call) holds it well within it.
	HandWaitMS int64 `json:"hand_wait_ms,omitempty"`
}

// Unread is what a node's wake-up service reads of an agent's inbox: the
// owed items the agent has not read yet (asks not yet shown to it,
// invitations not yet taken), bounded by count, not by their texts' size
// as a take is (Pending): a long ask does not hide the others.
type Unread struct {
	// Items are the unread owed items, at most the number asked for,
	// chosen in turns by asking node (a node's flood does not crowd out
	// another's) and listed in the order they arrived at this node. A text
	// is cut to UnreadText characters (a wake text shows less).
	Items []Item `json:"items"`
	// LeftOut counts the unread owed items Items leaves out.
	LeftOut int `json:"left_out,omitempty"`
	// Owed are the IDs, of those the caller asked after, of the items the
	// agent still owes: an ask not answered nor dismissed (read or not),
	// an invitation not taken.
	Owed []string `json:"owed,omitempty"`
}

// UnreadText is the most characters an Unread item's text keeps: more
// than a wake text shows of one (manual.MaxLen).
const UnreadText = 4000

// AckRequest confirms a two-step hand-out (Pending.Hand).
type AckRequest struct {
	Hand string `json:"hand"`
	// Shown, when given, confirms only the items of the hand-out with these
	// IDs (Item.ID): the caller showed those and left the others out (a
	// hook's text cut to its client's size). The others are offered to the
	// agent again at once, as an unconfirmed hand-out's are once its wait
	// passed; IDs the hand-out does not hold are ignored. Absent (nil), the
	// whole hand-out is confirmed; an empty list confirms none of it.
	Shown []string `json:"shown,omitzero"`
}

// AckResult says whether the hand-out was still open: false when it was
// confirmed already, or its wait passed and its items were offered again
// (then the agent may see them twice), or no such hand-out was made.
type AckResult struct {
	Acked bool `json:"acked"`
}

// WaitRequest waits for something new for an agent.
type WaitRequest struct {
	Seconds float64 // at most MaxWait
	// Take hands the items out when there is anything but reminders;
	// without it nothing is handed out and the wait ends once something
	// arrived after After (a Pending.Cursor; empty: after the call began).
	Take  bool
	After string
}

// RoomCount counts unread messages of a room that were not listed.
type RoomCount struct {
	Room        string `json:"room"`
	RoomName    string `json:"room_name"`
	RoomCreator string `json:"room_creator,omitempty"` // as in Item
	Count       int    `json:"count"`
}

// RoomAside tells a room apart from others of its name in a text that does
// not give its ID: " (created by @PEER, room_id ID)" when creator (an
// Item's RoomCreator) is set, else "". The @PEER reads as a handle where
// texts are shown with names.
func RoomAside(id, creator string) string {
	if creator == "" {
		return ""
	}
	return " (created by @" + creator + ", room_id " + id + ")"
}

// CreatedBy is RoomAside for a text that gives the room's ID in
// parentheses: ", created by @PEER" to put after it, or "".
func CreatedBy(creator string) string {
	if creator == "" {
		return ""
	}
	return ", created by @" + creator
}

// Empty reports whether there is nothing to show.
func (p Pending) Empty() bool { return len(p.Items) == 0 && len(p.MoreUnread) == 0 }

// OrEmpty returns p with nil lists made empty, so JSON shows [].
func (p Pending) OrEmpty() Pending {
	if p.Items == nil {
		p.Items = []Item{}
	}
	if p.MoreUnread == nil {
		p.MoreUnread = []RoomCount{}
	}
	return p
}

// The board: advisory claims on a project's files.

// ClaimRequest puts paths on a project's board.
type ClaimRequest struct {
	Project     string   `json:"project"`                // the project key (`parley board` shows it)
	Paths       []string `json:"paths"`                  // relative to the repository's root; globs *, ** and ?
	Note        string   `json:"note"`                   // why, in the agent's own words; one line
	TTLSeconds  float64  `json:"ttl_seconds,omitempty"`  // 0: 30 minutes; at most 8 hours
	WaitSeconds float64  `json:"wait_seconds,omitempty"` // wait up to this long for a conflicting claim to go
	Take        bool     `json:"take,omitempty"`
}

// Claim is one path an agent holds on a board.
type Claim struct {
	Path    string    `json:"path"`
	Holder  string    `json:"holder"` // NAME@PEER_ID
	Note    string    `json:"note"`
	Since   time.Time `json:"since"`
	Expires time.Time `json:"expires"`
	Event   string    `json:"event"`             // the claim event that set the expiry
	Project string    `json:"project,omitempty"` // in who: the board's project
}

// ClaimResult is a claim made.
type ClaimResult struct {
	Project       string  `json:"project"`
	Event         string  `json:"event"`
	Held          []Claim `json:"held"` // all the agent's claims on the board now
	WaitedSeconds float64 `json:"waited_seconds"`
	Pending       Pending `json:"pending"`
}

// ReleaseRequest takes an agent's claims off a board: the paths as it
// claimed them, or all of them when Paths is empty.
type ReleaseRequest struct {
	Project string   `json:"project"`
	Paths   []string `json:"paths,omitempty"`
	Take    bool     `json:"take,omitempty"`
}

// ReleaseResult is a release made.
type ReleaseResult struct {
	Project  string   `json:"project"`
	Event    string   `json:"event"`
	Released []string `json:"released"`
	Held     []Claim  `json:"held"` // the agent's claims left
	Pending  Pending  `json:"pending"`
}

// BoardRequest reads a project's board or its history (Path: only the
// events on paths that overlap it).
type BoardRequest struct {
	Project string   `json:"project"`
	Path    string   `json:"path,omitempty"`
	Paths   []string `json:"paths,omitempty"` // board: only the claims that overlap one of these
	Take    bool     `json:"take,omitempty"`
}

// MaxOpenMembers is the most members a room names as it opens: the
// result says what became of each, and an agent's client refuses a result
// past some 100 KB (a review's 2,000 names made one of 270 KB); more are
// invited one by one.
const MaxOpenMembers = 64

// MaxBoardClaims is the most claims (paths held) that what an agent or
// the dashboard reads of the boards lists: a board is written by every
// member, and one member's long claims made it megabytes (parley_board's
// answer, which goes into the agent's context; the dashboard's board
// panel, built and compared every second for each open page). Those left
// out are counted.
const MaxBoardClaims = 100

// BoardView is a project's board now.
type BoardView struct {
	Project string   `json:"project"`
	Rooms   []string `json:"rooms"`  // the board's rooms
	Claims  []Claim  `json:"claims"` // live claims, by path
	// Alive are the live agent sessions of the board's nodes (this node's
	// and its contacts' that are in the board), NAME@PEER_ID.
	Alive []string `json:"alive"`
	// Note says when claims matter little: only one session is alive.
	Note    string  `json:"note,omitempty"`
	Pending Pending `json:"pending"`
}

// BoardEvent is a claim or release of a board's history and what came of it.
type BoardEvent struct {
	ID      string     `json:"id"`
	Room    string     `json:"room"`
	Holder  string     `json:"holder"`
	Kind    string     `json:"kind"` // claim or release
	Time    time.Time  `json:"time"`
	Paths   []string   `json:"paths"` // release: none means all the holder's claims
	Note    string     `json:"note,omitempty"`
	Expires *time.Time `json:"expires,omitempty"` // claim: when it ends unless renewed or released
	LostTo  *Claim     `json:"lost_to,omitempty"` // claim: the earlier claim it overlapped (made apart)
	Bad     string     `json:"bad,omitempty"`     // why a malformed event was ignored
}

// BoardHistory is a board's claims and releases, oldest first.
type BoardHistory struct {
	Project string       `json:"project"`
	Events  []BoardEvent `json:"events"`
	Pending Pending      `json:"pending"`
}
