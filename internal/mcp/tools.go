package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/manual"
	"github.com/parley-mesh/parley/internal/termtext"
)

// Instructions tell a model what Parley is, in the MCP initialize result.
const Instructions = `Parley connects you with other agent sessions and people: on this machine, in your team, across companies.
An agent's address is NAME@PEER_ID, or NAME@HANDLE as results show it (or NAME for an agent of your own node). Rooms are lasting conversations with a purpose and members.
Every Parley tool result ends with what is pending for you: asks you owe come first, under a line saying someone is blocked on you, each with the call that answers it (parley_reply).
parley_ask asks an agent or a room and waits for the answer; parley_say posts without waiting; parley_read shows what you have not read; parley_who shows who is around and your rooms.`

// MaxWaitSeconds bounds blocking calls (MCP clients time out at 60 s).
const MaxWaitSeconds = 50

// Thread is accepted by every tool: programs that serve many threads
// (LangGraph) pass their thread_id so each thread is its own agent.
type Thread struct {
	ThreadID string `json:"thread_id,omitempty" jsonschema:"optional: your thread id, if one program runs many conversations (LangGraph); each thread is its own agent"`
}

func (t Thread) thread() string { return t.ThreadID }

// Spend is what the agent spent since its last Parley call, when its client
// tells it (say, ask and reply accept it); Parley never guesses it.
type Spend struct {
	TokensIn  *int64   `json:"tokens_in,omitempty" jsonschema:"optional, only if your client reports it: input tokens used since your last Parley call"`
	TokensOut *int64   `json:"tokens_out,omitempty" jsonschema:"optional, only if your client reports it: output tokens used since your last Parley call"`
	CostUSD   *float64 `json:"cost_usd,omitempty" jsonschema:"optional, only if your client reports it: cost in US dollars since your last Parley call"`
}

func (s Spend) spent() *localapi.Spend {
	if s.TokensIn == nil && s.TokensOut == nil && s.CostUSD == nil {
		return nil
	}
	return &localapi.Spend{TokensIn: s.TokensIn, TokensOut: s.TokensOut, CostUSD: s.CostUSD}
}

// Envelope is the part of every tool's structured output that Parley adds:
// the error, if the call failed, and what is pending for the agent.
type Envelope struct {
	// Notice says what the text's header lines say: a client may give
	// its model the structured output alone (Claude Code does).
	Notice string `json:"notice,omitempty" jsonschema:"what waits for you among pending, in a few lines; an ask there means someone is blocked on you"`
	Error  string `json:"error,omitempty"`
	// NameChange is the note of the text's first line when the session
	// was bound again under another name: the structured output tells it
	// too.
	NameChange string      `json:"name_change,omitempty" jsonschema:"your name changed during this call: you are now the agent it names; sign and answer as that one"`
	Pending    []Pending   `json:"pending"`
	MoreUnread []RoomCount `json:"more_unread"`
	// OwedLeftOut counts the asks the agent owes that pending leaves out
	// to keep the result small (localapi.Pending.OwedLeftOut).
	OwedLeftOut int `json:"owed_left_out,omitempty" jsonschema:"how many more asks you owe were left out of pending to keep the result small: they are listed as you answer or dismiss those shown"`
}

func (e *Envelope) env() *Envelope { return e }

// Pending is one item for the agent.
type Pending struct {
	Kind        string   `json:"kind" jsonschema:"ask (someone waits for your answer), reminder (an ask you still owe), invitation, removed (the room's creator took you out of a room), reply (to your ask), message, or from the board: claim_free (paths you were refused are free), claim_expiring (your claim ends soon), claim_lost (your claim lost to one made during a partition), claim_contested (another agent's claim made during a partition lost to yours: they may have changed the files)"`
	ID          string   `json:"id"`
	Room        string   `json:"room"`
	RoomName    string   `json:"room_name"`
	RoomCreator string   `json:"room_creator,omitempty" jsonschema:"the node that created the room, given when another of your node's rooms has the same name: use the room ID"`
	From        string   `json:"from"`
	Text        string   `json:"text"`
	ReplyTo     string   `json:"reply_to,omitempty"`
	To          string   `json:"to,omitempty"`
	Time        string   `json:"time"`
	Purpose     string   `json:"purpose,omitempty"`
	Members     []string `json:"members,omitempty"`
	// MembersLeftOut counts the members of an invitation's room (or of
	// the room an ask brought the agent into) that members leaves out (it
	// lists roomMembers).
	MembersLeftOut int `json:"members_left_out,omitempty" jsonschema:"how many members of the room were left out of members to keep the result small: parley_who lists them"`
	// TextLeftOut counts the characters of a long reply's text left out
	// (ReplyBudget); the text ends with the marker that says how to read
	// on.
	TextLeftOut int    `json:"text_left_out,omitempty" jsonschema:"how many characters of the text were left out to keep the result small; the text ends with the parley_read call that reads on"`
	Answer      string `json:"answer" jsonschema:"the call that answers or acts on it"`
	cut         cutText
}

// RoomCount counts unread messages of a room that were not listed.
type RoomCount struct {
	Room        string `json:"room"`
	RoomName    string `json:"room_name"`
	RoomCreator string `json:"room_creator,omitempty"`
	Count       int    `json:"count"`
}

// RegisterIn is parley_register's input.
type RegisterIn struct {
	Thread
	Name         string   `json:"name,omitempty" jsonschema:"your agent name on this node (a-z 0-9 . _ -), e.g. api-refactor"`
	Role         string   `json:"role,omitempty" jsonschema:"what you are, e.g. reviewer or backend dev"`
	WorkingOn    string   `json:"working_on,omitempty" jsonschema:"one line on what you work on now; your contacts see it"`
	Capabilities []string `json:"capabilities,omitempty" jsonschema:"skills others can find you by, e.g. go or sql"`
}

// RegisterOut is parley_register's output.
type RegisterOut struct {
	Envelope
	Agent        string   `json:"agent"`
	Address      string   `json:"address"`
	Role         string   `json:"role"`
	WorkingOn    string   `json:"working_on"`
	Capabilities []string `json:"capabilities"`
	// LeftBehind, on a rename, says what stays with the old name: its
	// rooms and the asks it owes are the old name's, not the new one's.
	LeftBehind string `json:"left_behind,omitempty" jsonschema:"on a rename: what stays with your old name (its rooms, the asks it owes); register under the old name again to answer those asks"`
	// OldAsksOwed counts the asks the old name owes.
	OldAsksOwed int `json:"old_asks_owed,omitempty" jsonschema:"on a rename: how many asks your old name still owes"`
}

// Empty is the input of tools that take nothing but a thread.
type Empty struct{ Thread }

// WhoIn is parley_who's input.
type WhoIn struct {
	Thread
	Node string `json:"node,omitempty" jsonschema:"list only the agents of one node: its name, handle or peer ID"`
}

// WhoOut is parley_who's output.
type WhoOut struct {
	Envelope
	Agents  []Agent `json:"agents"`
	Rooms   []Room  `json:"rooms"`
	LeftOut int     `json:"left_out,omitempty" jsonschema:"how many live agents were left out to keep the result small: pass node to list one node's"`
	// RoomsLeftOut counts the rooms left out within RoomsBudget.
	RoomsLeftOut int `json:"rooms_left_out,omitempty" jsonschema:"how many of your rooms were left out to keep the result small (those with unread messages come first): parley_read gives their messages; parley_leave the rooms you no longer need"`
}

// WhoBudget bounds what one parley_who lists of the agents (their lines
// of text and their structured form together): contacts may run 64
// agents each, and clients refuse large tool results (as ReadBudget).
// Your node's agents come first, then those you share a room with, then
// the others; what each works on is cut to whoWorkingOn characters and
// its capabilities to whoCaps. The first agent is always listed.
const WhoBudget = 48 << 10

const (
	whoWorkingOn = 200
	whoCaps      = 8
)

// Agent is a live agent.
type Agent struct {
	Address      string   `json:"address"`
	Handle       string   `json:"handle"`
	Name         string   `json:"name" jsonschema:"how its node reads here: its handle, or handle~SUFFIX when another node's handle reads the same; use it, not handle"`
	State        string   `json:"state"`
	Role         string   `json:"role"`
	WorkingOn    string   `json:"working_on"`
	Capabilities []string `json:"capabilities"`
	LastSeen     string   `json:"last_seen"`
	Local        bool     `json:"local"`
	Claims       []string `json:"claims" jsonschema:"what it holds on the project boards: path, until when, and why"`
}

// RoomsBudget bounds what one parley_who or parley_room_open without a
// name lists of the agent's rooms (their lines of text and their
// structured form together), as WhoBudget its agents: an agent may be in
// any number of rooms, of any number of members. Rooms with unread
// messages come first, the most unread first; each lists roomMembers of
// its members at most. The first room is always listed.
const RoomsBudget = 16 << 10

const roomMembers = 16

// Room is a room the agent is in.
type Room struct {
	RoomID         string   `json:"room_id"`
	Name           string   `json:"name"`
	Purpose        string   `json:"purpose"`
	Members        []string `json:"members"`
	MembersLeftOut int      `json:"members_left_out,omitempty" jsonschema:"how many members were left out of members to keep the result small"`
	Unread         int      `json:"unread"`
}

// FindIn is parley_find's input.
type FindIn struct {
	Thread
	Query string `json:"query" jsonschema:"a handle, an agent name or a capability (cap:go, agent:x, handle:y)"`
}

// FindOut is parley_find's output.
type FindOut struct {
	Envelope
	Cards   []Card `json:"cards"`
	LeftOut int    `json:"left_out,omitempty" jsonschema:"how many cards found were left out to keep the result small: narrow the query"`
	// What the node's search left out before the tool listed any.
	LeftOutPerNode int `json:"left_out_per_node,omitempty" jsonschema:"how many cards the search left out because their node (not yours nor a contact's) had given 16 already: search agent:NAME or handle:NAME for that node's"`
	LeftOutInAll   int `json:"left_out_in_all,omitempty" jsonschema:"how many cards the search left out because it keeps 256 at most (yours and your contacts' first): narrow the query"`
}

// FindBudget bounds the text of the cards one parley_find lists (the
// structured output holds the same cards): anyone may hand out cards, up
// to 64 of 32 capabilities each per node, and clients refuse large tool
// results (as ReadBudget). The first card is always listed.
const FindBudget = 32 << 10

// The most cards the node's search keeps (agents.Find): in all, and of
// one node that is neither this node nor a contact.
const (
	findKept    = 256
	findPerNode = 16
)

// Card is a public agent card.
type Card struct {
	Address      string   `json:"address"`
	Handle       string   `json:"handle"`
	Name         string   `json:"name" jsonschema:"how its node reads here: its handle, or handle~SUFFIX when it reads like a known node's or yours; use it, not handle"`
	Capabilities []string `json:"capabilities"`
	Client       string   `json:"client"`
	Contact      bool     `json:"contact" jsonschema:"whether its node is yours or a contact's; a node that is not is reached by address (NAME@PEER_ID) alone, as its handle names it only for nodes yours knows"`
}

// strangersShown is how many nodes that are not contacts parley_find's
// text names with the command that asks each to become a contact.
const strangersShown = 3

// RoomOpenIn is parley_room_open's input.
type RoomOpenIn struct {
	Thread
	Name    string   `json:"name,omitempty" jsonschema:"the room's name, e.g. release-1.0; without a name the rooms you are in are listed"`
	Purpose string   `json:"purpose,omitempty" jsonschema:"one line: what the room is for; every member sees it"`
	Members []string `json:"members,omitempty" jsonschema:"agents to bring in (at most 64; invite more with parley_invite): NAME@PEER_ID, or NAME for an agent of your node (a bare PEER_ID invites that node)"`
}

// RoomOpenOut is parley_room_open's output.
type RoomOpenOut struct {
	Envelope
	RoomID  string    `json:"room_id,omitempty"`
	Name    string    `json:"name,omitempty"`
	Purpose string    `json:"purpose,omitempty"`
	Invited []string  `json:"invited"`
	Failed  []Failure `json:"failed"`
	Rooms   []Room    `json:"rooms"`
	Notes   []string  `json:"notes,omitempty" jsonschema:"invited agents that could not be checked: their node tells yours nothing of its agents"`
	// RoomsLeftOut counts the rooms left out within RoomsBudget.
	RoomsLeftOut int `json:"rooms_left_out,omitempty" jsonschema:"how many of your rooms were left out to keep the result small (those with unread messages come first)"`
}

// Failure is a member that could not be brought in.
type Failure struct {
	Member string `json:"member"`
	Error  string `json:"error"`
}

// InviteIn is parley_invite's input.
type InviteIn struct {
	Thread
	Room   string `json:"room" jsonschema:"room ID (or the name of one of your rooms)"`
	Member string `json:"member" jsonschema:"agent NAME@PEER_ID, NAME for an agent of your node, or a PEER_ID (that node)"`
}

// PostOut is the output of tools that post one event.
type PostOut struct {
	Envelope
	ID       string `json:"id"`
	Room     string `json:"room"`
	RoomName string `json:"room_name"`
	Note     string `json:"note,omitempty" jsonschema:"set when the agent invited could not be checked (its node tells yours nothing of its agents), or when no other member of the room can take the post now"`
}

// SayIn is parley_say's input.
type SayIn struct {
	Thread
	Spend
	Room    string `json:"room" jsonschema:"room ID (or the name of one of your rooms)"`
	Text    string `json:"text" jsonschema:"the message (up to 64 KiB)"`
	To      string `json:"to,omitempty" jsonschema:"optional: the agent it is for, NAME@PEER_ID, or NAME on your node"`
	ReplyTo string `json:"reply_to,omitempty" jsonschema:"optional: id of the message it answers"`
}

// ReadIn is parley_read's input.
type ReadIn struct {
	Thread
	Room  string `json:"room,omitempty" jsonschema:"room ID or name; empty: every room you are in"`
	Limit int    `json:"limit,omitempty" jsonschema:"most events to return (default 50, max 500)"`
	Last  int    `json:"last,omitempty" jsonschema:"with room: the last N events of the room, read or not (max 500)"`
	// MessageID reads one event whole: a text cut for a tool result or a
	// hook ends with this call. A text longer than ReadPage comes in
	// pages: Offset is where a page starts.
	MessageID string `json:"message_id,omitempty" jsonschema:"alone: one event of a room you are in, read or not (its id, or its first 8 or more characters); nothing is marked read. A long text comes in parts: the result's next gives the call for the next part"`
	Offset    int    `json:"offset,omitempty" jsonschema:"with message_id: the character of the event's text to start from (0, the default, is its start; a cut text's marker and next give it)"`
}

// Message is one event as tools show it.
type Message struct {
	ID       string `json:"id"`
	Room     string `json:"room"`
	RoomName string `json:"room_name"`
	From     string `json:"from"`
	Kind     string `json:"kind"`
	Text     string `json:"text"`
	ReplyTo  string `json:"reply_to,omitempty"`
	To       string `json:"to,omitempty"`
	Time     string `json:"time"`
	// TextLeftOut: read in a room's order, a message longer than ReadPage
	// is cut, its text ending with the marker that reads on.
	TextLeftOut int `json:"text_left_out,omitempty" jsonschema:"how many characters of the text were left out to keep the result small; the text ends with the parley_read call that reads on"`
}

// ReadOut is parley_read's output.
type ReadOut struct {
	Envelope
	Messages []Message `json:"messages"`
	HasMore  bool      `json:"has_more"`
	LeftOut  int       `json:"left_out,omitempty" jsonschema:"with last: how many of the oldest events asked for were left out to keep the result small"`
	// With message_id: which part of the event's text this is.
	Offset     int    `json:"offset,omitempty" jsonschema:"with message_id: the character of the text this part starts at"`
	TextLength int    `json:"text_length,omitempty" jsonschema:"with message_id: how many characters the event's whole text has"`
	NextOffset int    `json:"next_offset,omitempty" jsonschema:"with message_id: where the next part of the text starts; absent when this part ends the text"`
	Next       string `json:"next,omitempty" jsonschema:"with message_id: the call that gives the next part of the text; absent when this part ends it"`
}

// ReadBudget bounds the texts of the messages one parley_read returns
// together (a page's first message is always given whole: at most 64 KiB).
// Clients refuse or cut larger tool results (Claude Code refuses one over
// 25,000 tokens by default), and a room of long messages must still read.
const ReadBudget = 32 << 10

// AskIn is parley_ask's input.
type AskIn struct {
	Thread
	Spend
	Text        string `json:"text" jsonschema:"your question"`
	To          string `json:"to,omitempty" jsonschema:"agent NAME@PEER_ID, or NAME on your node; without it the whole room is asked"`
	Room        string `json:"room,omitempty" jsonschema:"room to ask in; default: a room of you two, made if needed and named like coder@bob ↔ human@alice"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"how long to block for the answer, 1 to 50 (default 30)"`
}

// Reply is an answer to an ask. A long one is cut (ReplyBudget): its text
// ends with the marker that gives the parley_read call reading on.
type Reply struct {
	ID          string `json:"id"`
	From        string `json:"from"`
	Text        string `json:"text"`
	TextLeftOut int    `json:"text_left_out,omitempty" jsonschema:"how many characters of the reply were left out to keep the result small; the text ends with the parley_read call that reads on"`
	Time        string `json:"time"`
	cut         cutText
}

// AskOut is parley_ask's and parley_wait's output.
type AskOut struct {
	Envelope
	AskID    string `json:"ask_id,omitempty"`
	Room     string `json:"room,omitempty"`
	RoomName string `json:"room_name,omitempty"`
	Reply    *Reply `json:"reply,omitempty"`
	// Next says how to keep waiting when no reply came in time.
	Next string `json:"next,omitempty"`
	Note string `json:"note,omitempty" jsonschema:"set when the agent asked could not be checked: its node tells yours nothing of its agents"`
}

// WaitIn is parley_wait's input.
type WaitIn struct {
	Thread
	AskID       string `json:"ask_id,omitempty" jsonschema:"your ask to wait for (whole, or its first 8 characters or more); empty: wait for anything new for you"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"how long to block, 1 to 50 (default 30)"`
}

// ReplyIn is parley_reply's input.
type ReplyIn struct {
	Thread
	Spend
	MessageID string `json:"message_id" jsonschema:"id of the message or ask you answer (whole, or its first 8 characters or more)"`
	Text      string `json:"text" jsonschema:"your answer"`
}

// DismissIn is parley_dismiss's input.
type DismissIn struct {
	Thread
	AskID string `json:"ask_id" jsonschema:"id of an ask you owe and will not answer (whole, or its first 8 characters or more)"`
}

// DismissOut is parley_dismiss's output.
type DismissOut struct {
	Envelope
	Dismissed string `json:"dismissed"`
}

// LeaveIn is parley_leave's input.
type LeaveIn struct {
	Thread
	Room string `json:"room" jsonschema:"room ID (or the name of one of your rooms)"`
}

// LeaveOut is parley_leave's output.
type LeaveOut struct {
	Envelope
	ID       string `json:"id"`
	Room     string `json:"room"`
	RoomName string `json:"room_name"`
	NodeLeft bool   `json:"node_left" jsonschema:"true when no agent of your node is left in the room, so the node left it too"`
}

// MCP builds the MCP server with Parley's tools.
func (s *Server) MCP() *sdk.Server { return s.mcpWith(nil) }

// mcpWith builds the MCP server; with initialized set it declares the
// claude/channel capability and calls initialized once the client is.
func (s *Server) mcpWith(initialized func(context.Context)) *sdk.Server {
	opts := &sdk.ServerOptions{Instructions: Instructions}
	if initialized != nil {
		opts.Capabilities = &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{},
			Experimental: map[string]any{ChannelCapability: map[string]any{}}}
		opts.InitializedHandler = func(ctx context.Context, _ *sdk.InitializedRequest) { initialized(ctx) }
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "parley", Title: "Parley", Version: Version}, opts)
	addTool(srv, s, "parley_register", "Set your agent name, role, capabilities and what you work on (contacts see it). You are registered under a default name from the start; your node keeps these for your next session.", s.register)
	addTool(srv, s, "parley_who", "List the agents alive on your node and your contacts' nodes (state, role, what each works on), and the rooms you are in with their members; node lists one node's agents.", s.who)
	addTool(srv, s, "parley_find", "Find agents anywhere on the mesh by handle, agent name or capability.", s.find)
	addTool(srv, s, "parley_room_open", "Open a room (a lasting conversation) with a purpose, and bring agents in; each invited agent gets the room, its purpose and how to take part. Without a name it lists the rooms you are in.", s.roomOpen)
	addTool(srv, s, "parley_invite", "Bring an agent (NAME@PEER_ID, or NAME on your node) or a node (PEER_ID) into a room.", s.invite)
	addTool(srv, s, "parley_say", "Post a message to a room without waiting for an answer.", s.say)
	addTool(srv, s, "parley_read", "Read what you have not read yet, in one room or all your rooms, oldest first, paged; or with last the room's last events; or with message_id one event whole (a text cut elsewhere says so and gives this call), a long text in parts: each result's next (with offset) gives the next part.", s.read)
	addTool(srv, s, "parley_ask", "Ask an agent (to) or every member of a room (room) and block until the first answer or wait_seconds pass. On time-out you get ask_id: keep waiting with parley_wait.", s.ask)
	addTool(srv, s, "parley_wait", "Block until the reply to your ask arrives (ask_id), or until anything new arrives for you, at most wait_seconds.", s.wait)
	addTool(srv, s, "parley_reply", "Answer a message or an ask (as shown in your pending items) by its id.", s.reply)
	addTool(srv, s, "parley_dismiss", "Drop an ask you owe without answering it; it stops being shown to you.", s.dismiss)
	addTool(srv, s, "parley_claim", "Before you change shared files, put them on the project's board with a note saying why: other agents see who works on what. A claim that overlaps another agent's is refused with its holder, note and expiry (wait_seconds waits for it to go). Claims expire (ttl_minutes, default 30); claim again to renew.", s.claim)
	addTool(srv, s, "parley_release", "Take your claims off the project's board when you are done with the files.", s.release)
	addTool(srv, s, "parley_board", "Show the project's board: who works on which files, why, and until when; with history, who held what and when.", s.board)
	addTool(srv, s, "parley_leave", "Leave a room: you stop getting its messages and cannot post there until invited again.", s.leave)
	return srv
}

// call is one tool call of one agent: the handler fills its output, and
// hands over the pending items the node sent with its answer (take).
type call struct {
	agent   string
	pending *localapi.Pending
}

// take gives the wrapper the pending items the node put in its answer.
func (c *call) take(p localapi.Pending) { c.pending = &p }

// threaded is every tool input (they embed Thread).
type threaded interface{ thread() string }

// addTool registers a tool with the one shape all Parley tools have: the
// wrapper finds the calling agent, runs the handler, then adds the error
// (if any) and the agent's pending items (taken from the node unless the
// handler's own call brought them) to the structured output and the text.
func addTool[In threaded, Out any, PO interface {
	*Out
	env() *Envelope
}](srv *sdk.Server, s *Server, name, desc string, h func(ctx context.Context, c *call, in In) (Out, string, error)) {
	t := &sdk.Tool{Name: name, Description: desc, InputSchema: portableSchema[In](), OutputSchema: portableSchema[Out]()}
	sdk.AddTool(srv, t, func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		// The node hands the items out in two steps: the result carries
		// the hand-out (HandMeta), confirmed once it was written.
		ctx = localapi.WithTwoStep(ctx)
		// Each call names its session: the node refuses it for an agent
		// another session holds now.
		ctx = localapi.WithSession(ctx, s.sessionOf(in.thread()), s.conn)
		res := &sdk.CallToolResult{}
		agent, done, err := s.agentFor(ctx, in.thread())
		defer done()
		var out Out
		text := ""
		c := &call{agent: agent}
		renamed := ""
		if err == nil {
			out, text, err = h(ctx, c, in)
			ok, killed := false, error(nil)
			if lost(err) {
				ok, killed = s.rebound(ctx, in.thread(), c)
			}
			if killed != nil {
				err = killed
			}
			if ok {
				// The node had let the agent's registration lapse and
				// refused the call as one of an agent it does not know
				// (or of another session, which took the name
				// meanwhile): bound again, the call is made again.
				if c.agent != agent {
					renamed = fmt.Sprintf("Note: you are now %s, no longer %s: your registration had lapsed and another session took that name meanwhile.\n", c.agent, agent)
				}
				c.pending = nil
				out, text, err = h(ctx, c, in)
			}
		}
		// The output must meet its schema, an error's too (the SDK checks
		// it, and a client would get a protocol error instead of the
		// error's text): lists are [] and maps {}, never null.
		emptyNils(reflect.ValueOf(&out))
		env := PO(&out).env()
		if err != nil {
			env.Error = s.errorText(err)
			text = "Error: " + env.Error
			res.IsError = true
		}
		p := c.pending
		if p == nil && c.agent != "" && !errors.Is(err, localapi.ErrNoNode) {
			got, terr := s.api.Take(ctx, c.agent)
			if terr != nil {
				s.log.Debug("take pending failed", "agent", c.agent, "err", terr)
			} else {
				p = &got
			}
		}
		env.Pending, env.MoreUnread = []Pending{}, []RoomCount{}
		if p != nil {
			env.Pending, env.MoreUnread = s.convert(c.agent, *p)
			if p.Hand != "" {
				res.Meta = sdk.Meta{HandMeta: handMeta{Agent: c.agent, Hand: p.Hand, WaitMS: p.HandWaitMS}}
			}
		}
		env.OwedLeftOut = 0
		if p != nil {
			env.OwedLeftOut = p.OwedLeftOut
		}
		env.Notice = notice(env.Pending, env.MoreUnread, env.OwedLeftOut)
		if renamed != "" {
			env.NameChange = strings.TrimSpace(strings.TrimPrefix(renamed, "Note: "))
		}
		text = renamed + text
		res.Content = []sdk.Content{&sdk.TextContent{Text: termtext.Text(s.named(ctx, text+renderPending(env.Pending, env.MoreUnread, env.OwedLeftOut)))}}
		return res, out, nil
	})
}

// emptyNils sets every nil slice and map reachable through v's structs
// (and their slices' elements) to an empty one.
func emptyNils(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			emptyNils(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				emptyNils(f)
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			if v.CanSet() {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		for i := range v.Len() {
			emptyNils(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() && v.CanSet() {
			v.Set(reflect.MakeMap(v.Type()))
		}
	}
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

func (s *Server) register(ctx context.Context, c *call, in RegisterIn) (RegisterOut, string, error) {
	var out RegisterOut
	req := localapi.SessionRequest{Name: in.Name}
	if in.Role != "" {
		req.Role = &in.Role
	}
	if in.WorkingOn != "" {
		req.WorkingOn = &in.WorkingOn
	}
	if in.Capabilities != nil {
		req.Capabilities = &in.Capabilities
	}
	// What the old name has is its own: a rename leaves it behind, and
	// the result says so (before, the asks it owed were left without a
	// word). Looked at before the bind, handing out nothing.
	old := c.agent
	var oldRooms []string
	var oldOwed []localapi.Item
	if old != "" && in.Name != "" && !strings.EqualFold(strings.TrimSpace(in.Name), old) {
		if w, err := s.api.AgentWho(ctx, old, localapi.AgentRequest{}); err == nil {
			for _, r := range w.Rooms {
				oldRooms = append(oldRooms, r.Name)
			}
		}
		oldOwed, _ = s.api.Owed(ctx, old)
	}
	info, err := s.bind(ctx, in.ThreadID, req)
	if err != nil {
		return out, "", err
	}
	c.agent = info.Name
	out.Agent, out.Address, out.Role, out.WorkingOn = info.Name, info.Address, info.Role, info.WorkingOn
	out.Capabilities = orEmpty(info.Capabilities)
	text := fmt.Sprintf("You are %s (address %s).", info.Name, info.Address)
	if old != "" && info.Name != old && (len(oldRooms) > 0 || len(oldOwed) > 0) {
		out.LeftBehind = leftBehind(old, info.Name, oldRooms, oldOwed)
		out.OldAsksOwed = len(oldOwed)
		text += "\n" + out.LeftBehind
	}
	return out, text, nil
}

// leftBehind says what a rename from old to now left with the old name.
func leftBehind(old, now string, rooms []string, owed []localapi.Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Your old name %q keeps what was its own; it is not %s's:", old, now)
	if len(rooms) > 0 {
		shown := rooms
		if len(shown) > 10 {
			shown = shown[:10]
		}
		fmt.Fprintf(&b, " its %d room(s) (%s", len(rooms), strings.Join(quoteAll(shown), ", "))
		if len(rooms) > len(shown) {
			fmt.Fprintf(&b, " and %d more", len(rooms)-len(shown))
		}
		b.WriteString(")")
	}
	if len(owed) > 0 {
		if len(rooms) > 0 {
			b.WriteString(" and")
		}
		fmt.Fprintf(&b, " the %d ask(s) it owes", len(owed))
		for i, it := range owed {
			if i == 5 {
				fmt.Fprintf(&b, "; and %d more", len(owed)-i)
				break
			}
			fmt.Fprintf(&b, "; %s from %s: %q", it.ID, it.From, clipText(it.Text, 100))
		}
		fmt.Fprintf(&b, ". Their askers wait on %q: register as %q again to answer them", old, old)
	}
	b.WriteString(".")
	return b.String()
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", clipText(s, 100))
	}
	return out
}

func (s *Server) who(ctx context.Context, c *call, in WhoIn) (WhoOut, string, error) {
	out := WhoOut{Agents: []Agent{}, Rooms: []Room{}}
	res, err := s.api.AgentWho(ctx, c.agent, localapi.AgentRequest{Take: true})
	if err != nil {
		return out, "", err
	}
	c.take(res.Pending)
	out.Rooms, out.RoomsLeftOut = rooms(res.Rooms)
	node := strings.TrimSpace(in.Node)
	ws := slices.Clone(res.Agents)
	if node != "" {
		ws = slices.DeleteFunc(ws, func(w localapi.WhoEntry) bool {
			return w.PeerID != node && !strings.EqualFold(w.Name, node) && !strings.EqualFold(w.Handle, node)
		})
	}
	// Your node's agents first, then those you share a room with.
	shared := make(map[string]bool)
	for _, r := range res.Rooms {
		for _, m := range r.Members {
			shared[m] = true
		}
	}
	rank := func(w localapi.WhoEntry) int {
		switch {
		case w.Local:
			return 0
		case shared[w.Address]:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(ws, func(a, b localapi.WhoEntry) int { return rank(a) - rank(b) })
	var lines strings.Builder
	used := 0
	for _, w := range ws {
		caps := orEmpty(w.Capabilities)
		if len(caps) > whoCaps {
			caps = caps[:whoCaps]
		}
		a := Agent{Address: w.Address, Handle: w.Handle, Name: nameOr(w.Name, w.Handle), State: w.State, Role: w.Role,
			WorkingOn: clipText(w.WorkingOn, whoWorkingOn), Capabilities: caps, LastSeen: w.LastSeen.UTC().Format(time.RFC3339), Local: w.Local,
			Claims: claimLines(w.Claims)}
		line := fmt.Sprintf("\n• %s (%s)%s%s%s", a.Address, a.State, labelled(" role: ", a.Role), quoted(" — working on: ", a.WorkingOn),
			labelled(" — claims: ", strings.Join(a.Claims, "; ")))
		raw, _ := json.Marshal(a)
		cost := len(line) + len(raw)
		if used > 0 && used+cost > WhoBudget {
			break
		}
		used += cost
		out.Agents = append(out.Agents, a)
		lines.WriteString(line)
	}
	out.LeftOut = len(ws) - len(out.Agents)
	var b strings.Builder
	switch {
	case node != "" && len(ws) == 0:
		fmt.Fprintf(&b, "No agent alive of node %.100q (give its name, handle or peer ID; parley_who without node lists all).", node)
	case len(ws) == 1:
		b.WriteString("1 agent alive:")
	default:
		fmt.Fprintf(&b, "%d agents alive:", len(ws))
	}
	b.WriteString(lines.String())
	if out.LeftOut > 0 {
		fmt.Fprintf(&b, "\n… and %d more left out to keep this short (yours and those you share a room with come first): pass node (a node's name, handle or peer ID) to list one node's agents.", out.LeftOut)
	}
	writeRooms(&b, out.Rooms, out.RoomsLeftOut)
	return out, b.String(), nil
}

// clipText cuts s to at most n characters, marking the cut with "…".
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// rooms lists the agent's rooms within RoomsBudget, those with unread
// messages first (the most unread first), and counts those left out.
func rooms(rs []localapi.AgentRoom) ([]Room, int) {
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(a, b localapi.AgentRoom) int { return b.Unread - a.Unread })
	out := []Room{}
	used := 0
	for _, r := range rs {
		ms := orEmpty(r.Members)
		room := Room{RoomID: r.RoomID, Name: r.Name, Purpose: r.Purpose, Members: ms, Unread: r.Unread}
		if len(ms) > roomMembers {
			room.Members, room.MembersLeftOut = ms[:roomMembers], len(ms)-roomMembers
		}
		raw, _ := json.Marshal(room)
		cost := len(roomLine(room)) + len(raw)
		if used > 0 && used+cost > RoomsBudget {
			break
		}
		used += cost
		out = append(out, room)
	}
	return out, len(rs) - len(out)
}

func roomLine(r Room) string {
	more := ""
	if r.MembersLeftOut > 0 {
		more = fmt.Sprintf(" and %d more", r.MembersLeftOut)
	}
	return fmt.Sprintf("\n• %q (%s)%s — members: %s%s; %d unread", r.Name, r.RoomID, quoted(" — ", r.Purpose), strings.Join(r.Members, ", "), more, r.Unread)
}

func writeRooms(b *strings.Builder, rs []Room, leftOut int) {
	switch n := len(rs) + leftOut; n {
	case 0:
		b.WriteString("\nYou are in no room.")
	case 1:
		b.WriteString("\nYou are in 1 room:")
	default:
		fmt.Fprintf(b, "\nYou are in %d rooms:", n)
	}
	for _, r := range rs {
		b.WriteString(roomLine(r))
	}
	if leftOut > 0 {
		fmt.Fprintf(b, "\n… and %d more rooms left out to keep this short (those with unread messages come first): parley_read gives their messages; parley_leave the rooms you no longer need.", leftOut)
	}
}

// nameOr is a node's name as the node gives it, or its handle when the
// node gives none.
func nameOr(name, handle string) string {
	if name != "" {
		return name
	}
	return handle
}

func labelled(label, s string) string {
	if s == "" {
		return ""
	}
	return label + s
}

// quoted is labelled for a text from another node that may hold line
// breaks (what an agent works on, a room's purpose): quoted, on one line.
func quoted(label, s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("%s%q", label, s)
}

func (s *Server) find(ctx context.Context, c *call, in FindIn) (FindOut, string, error) {
	out := FindOut{Cards: []Card{}}
	if strings.TrimSpace(in.Query) == "" {
		return out, "", fmt.Errorf("query is empty: give a handle, an agent name or a capability")
	}
	res, err := s.api.Find(ctx, in.Query)
	if err != nil {
		return out, "", err
	}
	cards := res.Cards
	out.LeftOutPerNode, out.LeftOutInAll = res.LeftOutPerNode, res.LeftOutInAll
	var lines strings.Builder
	used := 0
	var strangers []string // peer IDs of listed nodes that are not contacts, then their names
	for _, cv := range cards {
		n := nameOr(cv.Name, cv.Handle)
		// A node that is no contact shows by its peer ID: its handle
		// does not name it here (names.Resolve), and "coder@alice"
		// copied from "(alice)" was refused.
		of := n
		if !cv.Contact {
			of += ", not a contact"
		}
		line := fmt.Sprintf("\n• %s (%s)%s", cv.Address, of, labelled(" — ", strings.Join(cv.Capabilities, ", ")))
		if used > 0 && used+len(line) > FindBudget {
			break
		}
		used += len(line)
		out.Cards = append(out.Cards, Card{Address: cv.Address, Handle: cv.Handle, Name: n, Capabilities: orEmpty(cv.Capabilities), Client: cv.Client, Contact: cv.Contact})
		lines.WriteString(line)
		if !cv.Contact && !slices.Contains(strangers, cv.PeerID) {
			strangers = append(strangers, cv.PeerID, n)
		}
	}
	out.LeftOut = len(cards) - len(out.Cards)
	var b strings.Builder
	switch {
	case len(cards) == 0:
		b.WriteString("No agent found.")
	case out.LeftOut > 0:
		fmt.Fprintf(&b, "%d agents found; the first %d (yours, your contacts', then others'), %d left out to keep this short: narrow the search (agent:NAME, handle:NAME, or a rarer capability).", len(cards), len(out.Cards), out.LeftOut)
	case len(cards) == 1:
		b.WriteString("1 agent found:")
	default:
		fmt.Fprintf(&b, "%d agents found:", len(cards))
	}
	b.WriteString(lines.String())
	if len(strangers) > 0 {
		b.WriteString("\nAn agent of a node that is not a contact is reached by the address shown, NAME@PEER_ID: a handle names a node only once your node knows it. An ask or invite of it waits on its node for its user's answer; a contact request comes first for its agents to show in parley_who (and for its handle to name it):")
		for i := 0; i < len(strangers) && i < 2*strangersShown; i += 2 {
			fmt.Fprintf(&b, " `parley contact request %s` (%s)", strangers[i], strangers[i+1])
		}
		if len(strangers) > 2*strangersShown {
			b.WriteString(" …")
		}
		b.WriteString(".")
	}
	if out.LeftOutPerNode > 0 {
		fmt.Fprintf(&b, "\nThe search left out %d more cards: it keeps at most %d of a node that is neither yours nor a contact's; search agent:NAME or handle:HANDLE to see a node's others.", out.LeftOutPerNode, findPerNode)
	}
	if out.LeftOutInAll > 0 {
		fmt.Fprintf(&b, "\nThe search left out %d more cards: it keeps at most %d in all, yours and your contacts' first; narrow the query (agent:NAME, handle:NAME, or a rarer capability).", out.LeftOutInAll, findKept)
	}
	return out, b.String(), nil
}

func (s *Server) roomOpen(ctx context.Context, c *call, in RoomOpenIn) (RoomOpenOut, string, error) {
	out := RoomOpenOut{Invited: []string{}, Failed: []Failure{}, Rooms: []Room{}}
	if strings.TrimSpace(in.Name) == "" {
		if len(in.Members) > 0 || in.Purpose != "" {
			return out, "", fmt.Errorf("name is required to open a room: what is it about?")
		}
		res, err := s.api.AgentWho(ctx, c.agent, localapi.AgentRequest{Take: true})
		if err != nil {
			return out, "", err
		}
		c.take(res.Pending)
		out.Rooms, out.RoomsLeftOut = rooms(res.Rooms)
		var b strings.Builder
		writeRooms(&b, out.Rooms, out.RoomsLeftOut)
		return out, strings.TrimPrefix(b.String(), "\n"), nil
	}
	res, err := s.api.OpenRoom(ctx, c.agent, localapi.OpenRoomRequest{Name: in.Name, Purpose: in.Purpose, Members: in.Members, Take: true})
	if err != nil {
		return out, "", err
	}
	c.take(res.Pending)
	out.RoomID, out.Name, out.Purpose, out.Invited = res.RoomID, res.Name, res.Purpose, orEmpty(res.Invited)
	for _, f := range res.Failed {
		out.Failed = append(out.Failed, Failure(f))
	}
	text := fmt.Sprintf("Room %q is open: room_id %s.", out.Name, out.RoomID)
	if len(out.Invited) > 0 {
		text += " Invited: " + strings.Join(out.Invited, ", ") + "."
	}
	for _, f := range out.Failed {
		text += fmt.Sprintf("\nNot invited: %s: %s", f.Member, f.Error)
	}
	out.Notes = res.Notes
	for _, n := range out.Notes {
		text += "\nNote: " + n
	}
	return out, text, nil
}

func (s *Server) invite(ctx context.Context, c *call, in InviteIn) (PostOut, string, error) {
	res, err := s.api.Invite(ctx, c.agent, localapi.InviteRequest{Room: in.Room, Member: in.Member, Take: true})
	if err != nil {
		return PostOut{}, "", err
	}
	c.take(res.Pending)
	out := PostOut{ID: res.ID, Room: res.Room.RoomID, RoomName: res.Room.Name, Note: res.Note}
	text := fmt.Sprintf("Invited %s into room %s.", in.Member, roomRef(out.RoomName, out.Room))
	if res.Waits {
		text = fmt.Sprintf("Invited %s into room %s: its node is not a contact that lets you invite it at once, so the invite waits for its user's answer.", in.Member, roomRef(out.RoomName, out.Room))
	}
	if out.Note != "" {
		text += "\nNote: " + out.Note
	}
	return out, text, nil
}

func (s *Server) say(ctx context.Context, c *call, in SayIn) (PostOut, string, error) {
	res, err := s.api.Say(ctx, c.agent, localapi.SayRequest{Room: in.Room, Text: in.Text, To: in.To, ReplyTo: in.ReplyTo, Take: true, Spent: in.spent()})
	if err != nil {
		return PostOut{}, "", err
	}
	c.take(res.Pending)
	out := PostOut{ID: res.ID, Room: res.Room.RoomID, RoomName: res.Room.Name, Note: res.Note}
	text := fmt.Sprintf("Posted in %s: id %s", roomRef(out.RoomName, out.Room), out.ID)
	if out.Note != "" {
		text += "\nNote: " + out.Note
	}
	return out, text, nil
}

func (s *Server) reply(ctx context.Context, c *call, in ReplyIn) (PostOut, string, error) {
	res, err := s.api.Reply(ctx, c.agent, localapi.ReplyRequest{MessageID: in.MessageID, Text: in.Text, Take: true, Spent: in.spent()})
	if err != nil {
		return PostOut{}, "", err
	}
	c.take(res.Pending)
	out := PostOut{ID: res.ID, Room: res.Room.RoomID, RoomName: res.Room.Name}
	return out, fmt.Sprintf("Replied in %s: id %s", roomRef(out.RoomName, out.Room), out.ID), nil
}

// roomRef names a room in a confirmation: its name and its ID, as another
// room of this node may read alike.
func roomRef(name, id string) string { return fmt.Sprintf("%q (room_id %s)", name, id) }

// message is an event as tools show it: a sentence for what is not a
// message.
func message(it localapi.Item) Message {
	m := Message{ID: it.ID, Room: it.Room, RoomName: it.RoomName, From: it.From, Kind: it.Kind, Text: it.Text,
		ReplyTo: it.ReplyTo, To: it.To, Time: msTime(it.Time)}
	switch it.Kind {
	case "create":
		m.Text = fmt.Sprintf("opened the room %q%s", it.Text, quoted(" — purpose: ", it.Purpose))
	case "invite":
		m.Text = "invited node " + it.Target
		if it.To != "" {
			m.Text = "invited " + it.To
		}
	case "join":
		m.Text = "joined the room"
	case "leave":
		_, fromNode, _ := strings.Cut(it.From, "@")
		switch {
		case it.Target == "" && it.To != "" && !strings.HasSuffix(it.To, "@"+fromNode):
			m.Text = "removed " + it.To + " from the room"
		case it.Target == "" && it.To != "":
			m.Text = it.To + " left the room"
		case it.Target == "":
			m.Text = "left the room"
		case strings.HasSuffix(it.From, "@"+it.Target):
			m.Text = "left the room, with its node"
		default:
			m.Text = "removed node " + it.Target + " from the room"
		}
	}
	return m
}

func (s *Server) read(ctx context.Context, c *call, in ReadIn) (ReadOut, string, error) {
	out := ReadOut{Messages: []Message{}}
	switch {
	case in.Offset < 0:
		return out, "", fmt.Errorf("offset must be 0 or more: the character of the event's text to start from")
	case in.Offset > 0 && in.MessageID == "":
		return out, "", fmt.Errorf("offset goes with message_id: it is where a part of that event's text starts")
	}
	req := localapi.ReadRequest{Room: in.Room, Limit: in.Limit, Last: in.Last, MaxBytes: ReadBudget, ID: in.MessageID, Take: true}
	if in.MessageID != "" {
		req.MaxBytes = 0 // the one event whole, given here a page at a time
	}
	res, err := s.api.Read(ctx, c.agent, req)
	if err != nil {
		return out, "", err
	}
	c.take(res.Pending)
	out.HasMore, out.LeftOut = res.More, res.LeftOut
	var b strings.Builder
	if in.MessageID != "" && len(res.Messages) == 1 {
		return s.readPage(res.Messages[0], in.Offset, res.Pending, out)
	}
	if in.MessageID != "" {
		b.WriteString("The event:")
	} else if in.Last > 0 {
		fmt.Fprintf(&b, "The last %d events:", len(res.Messages))
		if res.LeftOut > 0 {
			fmt.Fprintf(&b, " (the %d before them left out to keep this result small: ask for fewer with last)", res.LeftOut)
		}
	} else {
		fmt.Fprintf(&b, "%d unread:", len(res.Messages))
	}
	owed := map[string]bool{}
	for _, it := range res.Pending.Items {
		if it.Kind == "ask" {
			owed[it.ID] = true
		}
	}
	for _, it := range res.Messages {
		m := message(it)
		// A message longer than a page (a page's first is given whatever
		// its size) is cut, with the call that reads on.
		cut := cutEvent(m.Text, m.ID, 0, ReadPage)
		m.Text, m.TextLeftOut = cut.shown(), cut.left
		out.Messages = append(out.Messages, m)
		owes := ""
		if owed[m.ID] {
			owes = "; someone is blocked on you: this ask is below, with how to answer it"
		}
		fmt.Fprintf(&b, "\n[%s] %s in %q%s (%s%s): %s%s", m.ID, m.From, m.RoomName, localapi.RoomAside(it.Room, it.RoomCreator), m.Kind, owes, manual.Inline(cut.head, TextDepth), cut.marker)
	}
	if out.HasMore {
		b.WriteString("\n(more unread: call parley_read again)")
	}
	return out, b.String(), nil
}

// readPage is parley_read of one event by its ID: its text from character
// offset on, as much as ReadPage holds, and, when more follows, the call
// that gives the next part (out.Next, and the text's last line). The
// structured output's text is the part as it is, so that the parts put
// together are the text whole.
func (s *Server) readPage(it localapi.Item, offset int, p localapi.Pending, out ReadOut) (ReadOut, string, error) {
	m := message(it)
	r := []rune(m.Text)
	if offset > len(r) {
		return out, "", fmt.Errorf("offset %d is past the end of the text of event %s: it has %d characters", offset, m.ID, len(r))
	}
	part, left := clipLong(string(r[offset:]), ReadPage)
	end := offset + utf8.RuneCountInString(part)
	m.Text = part
	out.Messages = append(out.Messages, m)
	out.Offset, out.TextLength = offset, len(r)
	var b strings.Builder
	if offset == 0 && left == 0 {
		b.WriteString("The event, whole:")
	} else {
		fmt.Fprintf(&b, "The event, characters %d to %d of its text's %d:", offset, end, len(r))
	}
	owes := ""
	if slices.ContainsFunc(p.Items, func(o localapi.Item) bool { return o.Kind == "ask" && o.ID == m.ID }) {
		owes = "; someone is blocked on you: this ask is below, with how to answer it"
	}
	fmt.Fprintf(&b, "\n[%s] %s in %q%s (%s%s): %s", m.ID, m.From, m.RoomName, localapi.RoomAside(it.Room, it.RoomCreator), m.Kind, owes, manual.Inline(part, TextDepth))
	if left > 0 {
		out.NextOffset = end
		out.Next = fmt.Sprintf(`parley_read {"message_id":%q,"offset":%d}`, m.ID, end)
		b.WriteString(manual.CutRest(left, end, m.ID))
	} else if offset > 0 {
		b.WriteString("\n(the end of the text)")
	}
	return out, b.String(), nil
}

// waitFor turns wait_seconds into a wait: 0 (left out) is the default
// 30 s; below 0 or above MaxWaitSeconds is refused naming the range, as
// limit and ttl_minutes are.
func waitFor(sec int) (time.Duration, error) {
	switch {
	case sec < 0 || sec > MaxWaitSeconds:
		return 0, fmt.Errorf("wait_seconds must be 0 to %d (0 or left out: 30)", MaxWaitSeconds)
	case sec == 0:
		return 30 * time.Second, nil
	}
	return time.Duration(sec) * time.Second, nil
}

func askOut(res localapi.AskResult) AskOut {
	out := AskOut{AskID: res.AskID, Room: res.Room.RoomID, RoomName: res.Room.Name}
	if r := res.Reply; r != nil {
		c := cutEvent(r.Text, r.ID, 0, ReplyBudget)
		out.Reply = &Reply{ID: r.ID, From: r.From, Text: c.shown(), TextLeftOut: c.left, Time: msTime(r.Time), cut: c}
	}
	return out
}

func (s *Server) ask(ctx context.Context, c *call, in AskIn) (AskOut, string, error) {
	d, err := waitFor(in.WaitSeconds)
	if err != nil {
		return AskOut{}, "", err
	}
	// The ask is posted first and its reply waited for in a second call,
	// as `parley room ask` does: whatever cuts the wait short (the node
	// stopping), the agent is told the ask it posted, and waits for it
	// instead of asking again.
	res, err := s.api.Ask(ctx, c.agent, localapi.AskRequest{Text: in.Text, To: in.To, Room: in.Room, Spent: in.spent()})
	if err != nil {
		return AskOut{}, "", err
	}
	if res.Reply == nil {
		got, werr := s.api.WaitReply(ctx, c.agent, res.AskID, d, true)
		if werr != nil {
			out := askOut(res)
			out.Note = res.Note
			out.Next = fmt.Sprintf(`parley_wait {"ask_id":%q,"wait_seconds":%d}`, out.AskID, MaxWaitSeconds)
			return out, "", askPosted{ask: out.AskID, next: out.Next, why: s.errorWords(werr)}
		}
		got.Note = res.Note
		res = got
		c.take(res.Pending)
	}
	out := askOut(res)
	out.Note = res.Note
	text := askText(&out)
	if out.Note != "" {
		text += "\nNote: " + out.Note
	}
	return out, text, nil
}

// askPosted is a wait for an ask's reply that failed after the ask was
// posted: its text names the ask and how to wait for it again. It is no
// refusal of the call (a lapsed registration's, which the server answers
// by making the call again, and would post the ask twice).
type askPosted struct {
	ask, next, why string
}

func (e askPosted) Error() string {
	return fmt.Sprintf("your ask %s was posted and stays open, but waiting for its reply failed: %s; do not ask again: %s waits for its reply (once the node runs again), which also shows in your pending items when it comes",
		e.ask, e.why, e.next)
}

func askText(out *AskOut) string {
	if out.Reply != nil {
		return fmt.Sprintf("Reply from %s (id %s):\n%s", out.Reply.From, out.Reply.ID, out.Reply.cut.block())
	}
	out.Next = fmt.Sprintf(`parley_wait {"ask_id":%q,"wait_seconds":%d}`, out.AskID, MaxWaitSeconds)
	return fmt.Sprintf("No reply yet to ask %s in room %q. %s keeps waiting; the reply also shows in your pending items when it comes.",
		out.AskID, out.RoomName, out.Next)
}

func (s *Server) wait(ctx context.Context, c *call, in WaitIn) (AskOut, string, error) {
	d, err := waitFor(in.WaitSeconds)
	if err != nil {
		return AskOut{}, "", err
	}
	if in.AskID != "" {
		res, err := s.api.WaitReply(ctx, c.agent, in.AskID, d, true)
		if err != nil {
			return AskOut{}, "", err
		}
		c.take(res.Pending)
		out := askOut(res)
		return out, askText(&out), nil
	}
	p, err := s.api.Wait(ctx, c.agent, localapi.WaitRequest{Seconds: d.Seconds(), Take: true})
	if err != nil {
		return AskOut{}, "", err
	}
	c.take(p)
	for _, it := range p.Items {
		if it.Kind != "reminder" {
			return AskOut{}, "New for you:", nil
		}
	}
	if len(p.MoreUnread) > 0 {
		return AskOut{}, "New for you:", nil
	}
	return AskOut{}, "Nothing new.", nil
}

func (s *Server) dismiss(ctx context.Context, c *call, in DismissIn) (DismissOut, string, error) {
	if strings.TrimSpace(in.AskID) == "" {
		return DismissOut{}, "", fmt.Errorf("ask_id is required: the id of an ask you owe")
	}
	p, err := s.api.Dismiss(ctx, c.agent, localapi.DismissRequest{AskID: in.AskID, Take: true})
	if err != nil {
		return DismissOut{}, "", err
	}
	c.take(p)
	return DismissOut{Dismissed: in.AskID}, fmt.Sprintf("Dismissed ask %s: it is no longer shown to you.", in.AskID), nil
}

func (s *Server) leave(ctx context.Context, c *call, in LeaveIn) (LeaveOut, string, error) {
	res, err := s.api.Leave(ctx, c.agent, localapi.LeaveRequest{Room: in.Room, Take: true})
	if err != nil {
		return LeaveOut{}, "", err
	}
	c.take(res.Pending)
	out := LeaveOut{ID: res.ID, Room: res.Room.RoomID, RoomName: res.Room.Name, NodeLeft: res.NodeLeft}
	text := fmt.Sprintf("You left room %q.", out.RoomName)
	if out.NodeLeft {
		text += " No agent of your node is left in it, so your node left it too."
	}
	return out, text, nil
}

// orEmpty returns s, or an empty slice for nil, so JSON shows [].
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
