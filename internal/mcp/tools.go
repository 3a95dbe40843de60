package mcp

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/rooms"
)

// Instructions tell a model what Parley is, in the MCP initialize result.
const Instructions = `Parley connects you with other agent sessions and humans: on this machine, in your team, across companies.
Addresses are NAME@PEER_ID (or NAME for an agent of your own node). Rooms are persistent conversations.
Every Parley tool result ends with your pending items. If it says someone is blocked on you, answer that
first with the call it shows (parley_reply). Use parley_ask to ask another agent and wait for the answer,
parley_say to post without waiting, parley_read to catch up on a room, parley_who/parley_find to see who is around.`

// MaxWaitSeconds bounds blocking calls (MCP clients time out at 60 s).
const MaxWaitSeconds = 50

// Thread is accepted by every tool: programs that serve many threads
// (LangGraph) pass their thread_id so each thread is its own agent.
type Thread struct {
	ThreadID string `json:"thread_id,omitempty" jsonschema:"optional: your thread id, if one program runs many conversations (LangGraph); each thread is its own agent"`
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
	Agent   string `json:"agent"`
	Address string `json:"address"`
	PeerID  string `json:"peer_id"`
}

// Empty is the input of tools that take nothing but a thread.
type Empty struct{ Thread }

// WhoOut is parley_who's output.
type WhoOut struct {
	Envelope
	Agents []map[string]any `json:"agents"`
}

// FindIn is parley_find's input.
type FindIn struct {
	Thread
	Query string `json:"query" jsonschema:"a handle, an agent name or a capability (cap:go, agent:x, handle:y)"`
}

// FindOut is parley_find's output.
type FindOut struct {
	Envelope
	Cards []map[string]any `json:"cards"`
}

// RoomOpenIn is parley_room_open's input.
type RoomOpenIn struct {
	Thread
	Name    string   `json:"name" jsonschema:"the room's name, e.g. auth-migration"`
	Members []string `json:"members,omitempty" jsonschema:"agent addresses to bring in: NAME@PEER_ID (their node is invited) or NAME (an agent of your node)"`
}

// RoomOpenOut is parley_room_open's output.
type RoomOpenOut struct {
	Envelope
	RoomID  string   `json:"room_id"`
	Invited []string `json:"invited,omitempty"`
}

// InviteIn is parley_invite's input.
type InviteIn struct {
	Thread
	Room   string `json:"room" jsonschema:"room ID (or unique name)"`
	Member string `json:"member" jsonschema:"agent address NAME@PEER_ID, or a PEER_ID: that node is invited"`
}

// IDOut is the output of tools that post one event.
type IDOut struct {
	Envelope
	ID   string `json:"id"`
	Room string `json:"room,omitempty"`
}

// SayIn is parley_say's input.
type SayIn struct {
	Thread
	Room string `json:"room" jsonschema:"room ID (or unique name)"`
	Text string `json:"text" jsonschema:"the message (up to 64 KiB)"`
}

// ReadIn is parley_read's input.
type ReadIn struct {
	Thread
	Room  string `json:"room,omitempty" jsonschema:"room ID or name; empty: every room you take part in"`
	Limit int    `json:"limit,omitempty" jsonschema:"most messages to return (default 50, max 500)"`
}

// Message is one event as tools show it.
type Message struct {
	ID      string `json:"id"`
	Room    string `json:"room"`
	From    string `json:"from"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	ReplyTo string `json:"reply_to,omitempty"`
	To      string `json:"to,omitempty"`
	Time    string `json:"time"`
}

// ReadOut is parley_read's output.
type ReadOut struct {
	Envelope
	Messages []Message `json:"messages"`
	More     bool      `json:"more"`
}

// AskIn is parley_ask's input.
type AskIn struct {
	Thread
	Text        string `json:"text" jsonschema:"your question"`
	To          string `json:"to,omitempty" jsonschema:"agent address NAME@PEER_ID or NAME; needed unless room is given"`
	Room        string `json:"room,omitempty" jsonschema:"room to ask in; default: a room shared with the addressee (made if needed)"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"how long to block for the answer, 0 to 50 (default 30)"`
}

// Reply is an answer to an ask.
type Reply struct {
	ID   string `json:"id"`
	From string `json:"from"`
	Text string `json:"text"`
}

// AskOut is parley_ask's and parley_wait's output.
type AskOut struct {
	Envelope
	AskID string `json:"ask_id,omitempty"`
	Room  string `json:"room,omitempty"`
	Reply *Reply `json:"reply,omitempty"`
	// Next says how to keep waiting when no reply came in time.
	Next string `json:"next,omitempty"`
}

// WaitIn is parley_wait's input.
type WaitIn struct {
	Thread
	AskID       string `json:"ask_id,omitempty" jsonschema:"the ask to wait for; empty: wait for anything new for you"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"how long to block, 0 to 50 (default 30)"`
}

// ReplyIn is parley_reply's input.
type ReplyIn struct {
	Thread
	MessageID string `json:"message_id" jsonschema:"id of the message you answer"`
	Text      string `json:"text" jsonschema:"your answer"`
}

// LeaveIn is parley_leave's input.
type LeaveIn struct {
	Thread
	Room string `json:"room" jsonschema:"room ID (or unique name)"`
}

func tool(name, desc string) *sdk.Tool { return &sdk.Tool{Name: name, Description: desc} }

// MCP builds the MCP server with Parley's tools.
func (s *Server) MCP() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "parley", Title: "Parley", Version: Version},
		&sdk.ServerOptions{Instructions: Instructions})
	sdk.AddTool(srv, tool("parley_register", "Set your agent name, role and what you work on (contacts see it). Call it once when you start; you are already registered under a default name."), s.register)
	sdk.AddTool(srv, tool("parley_who", "List the agents alive on your node and your contacts' nodes: name, state, what each works on, last seen. Check it before starting work to know whether you are alone."), s.who)
	sdk.AddTool(srv, tool("parley_find", "Find agents anywhere on the mesh by handle, agent name or capability."), s.find)
	sdk.AddTool(srv, tool("parley_room_open", "Create a room (a persistent conversation) and bring members in. Returns room_id."), s.roomOpen)
	sdk.AddTool(srv, tool("parley_invite", "Invite another node (by an agent address NAME@PEER_ID or a PEER_ID) into a room."), s.invite)
	sdk.AddTool(srv, tool("parley_say", "Post a message to a room without waiting for an answer."), s.say)
	sdk.AddTool(srv, tool("parley_read", "Read what you have not read yet, in one room or all your rooms, oldest first, paged."), s.read)
	sdk.AddTool(srv, tool("parley_ask", "Ask another agent (or a room) a question and block until the answer comes or wait_seconds pass. On time-out you get ask_id: keep waiting with parley_wait."), s.ask)
	sdk.AddTool(srv, tool("parley_wait", "Block until the reply to an ask arrives (ask_id), or until anything new arrives for you, at most wait_seconds."), s.wait)
	sdk.AddTool(srv, tool("parley_reply", "Answer a message (an ask shown in your pending items) by its id."), s.reply)
	sdk.AddTool(srv, tool("parley_leave", "Leave a room."), s.leave)
	return srv
}

func (s *Server) register(ctx context.Context, _ *sdk.CallToolRequest, in RegisterIn) (*sdk.CallToolResult, RegisterOut, error) {
	var out RegisterOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	if err == nil && in.Name != "" {
		var n identity.AgentName
		n, err = identity.ParseAgentName(in.Name)
		if err == nil {
			session := s.cfg.Session
			if in.ThreadID != "" {
				session = "thread:" + in.ThreadID
			}
			var res localapi.BindResponse
			res, err = s.api.Bind(ctx, localapi.BindRequest{Session: session, Name: string(n)})
			if err == nil {
				old := agent
				agent = identity.AgentName(res.Agent)
				s.mu.Lock()
				if in.ThreadID != "" {
					s.threads[in.ThreadID] = agent
				} else {
					s.agent = agent
				}
				s.mu.Unlock()
				if old != agent {
					_ = s.api.Do(ctx, "DELETE", "/v1/agents/"+url.PathEscape(string(old)), nil, nil)
				}
			}
		}
	}
	if err == nil {
		s.mu.Lock()
		s.role, s.working, s.caps = in.Role, in.WorkingOn, in.Capabilities
		s.mu.Unlock()
		if aerr := s.announce(ctx); aerr != nil {
			s.log.Debug("agent registration failed", "err", aerr)
		}
	}
	var id localapi.Info
	if err == nil {
		id, err = s.api.ID(ctx)
	}
	out.Agent, out.PeerID = string(agent), id.PeerID
	out.Address = string(agent) + "@" + id.PeerID
	r, o, e := finish(ctx, s, agent, &out, fmt.Sprintf("You are %s (address %s).", agent, out.Address), err)
	return r, *o, e
}

func (s *Server) who(ctx context.Context, _ *sdk.CallToolRequest, in Empty) (*sdk.CallToolResult, WhoOut, error) {
	var out WhoOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	if err == nil {
		err = s.api.Do(ctx, "GET", "/v1/who", nil, &out.Agents)
	}
	if out.Agents == nil {
		out.Agents = []map[string]any{}
	}
	text := fmt.Sprintf("%d agents alive:\n%s", len(out.Agents), jsonText(out.Agents))
	r, o, e := finish(ctx, s, agent, &out, text, err)
	return r, *o, e
}

func (s *Server) find(ctx context.Context, _ *sdk.CallToolRequest, in FindIn) (*sdk.CallToolResult, FindOut, error) {
	var out FindOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	if err == nil && strings.TrimSpace(in.Query) == "" {
		err = fmt.Errorf("query is empty: give a handle, an agent name or a capability")
	}
	if err == nil {
		err = s.api.Do(ctx, "GET", "/v1/find?q="+url.QueryEscape(in.Query), nil, &out.Cards)
	}
	if out.Cards == nil {
		out.Cards = []map[string]any{}
	}
	r, o, e := finish(ctx, s, agent, &out, fmt.Sprintf("%d agents found:\n%s", len(out.Cards), jsonText(out.Cards)), err)
	return r, *o, e
}

// target reads an address or a bare peer ID into the node to invite.
func (s *Server) target(addr string) (identity.AgentAddr, error) {
	if !strings.Contains(addr, "@") {
		if p, err := peer.Decode(addr); err == nil {
			return identity.AgentAddr{Peer: p}, nil
		}
	}
	a, err := identity.ParseAgentAddr(addr)
	if err != nil {
		return a, fmt.Errorf("%v (an address is NAME@PEER_ID, or NAME for an agent of your node)", err)
	}
	return a, nil
}

func (s *Server) roomOpen(ctx context.Context, _ *sdk.CallToolRequest, in RoomOpenIn) (*sdk.CallToolResult, RoomOpenOut, error) {
	var out RoomOpenOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	if err == nil && strings.TrimSpace(in.Name) == "" {
		err = fmt.Errorf("name is required: what is the room about?")
	}
	var targets []identity.AgentAddr
	for _, m := range in.Members {
		if err != nil {
			break
		}
		var a identity.AgentAddr
		a, err = s.target(m)
		targets = append(targets, a)
	}
	var self localapi.Info
	if err == nil {
		self, err = s.api.ID(ctx)
	}
	if err == nil {
		var res localapi.CreateRoomResponse
		res, err = s.api.CreateRoom(ctx, in.Name, string(agent))
		out.RoomID = res.RoomID
	}
	if err == nil {
		_ = s.api.JoinInbox(ctx, string(agent), out.RoomID)
		var failed []string
		for _, a := range targets {
			if a.Peer == "" || a.Peer.String() == self.PeerID || slices.Contains(out.Invited, a.Peer.String()) {
				continue
			}
			if _, ierr := s.api.Invite(ctx, out.RoomID, a.Peer.String(), string(agent)); ierr != nil {
				failed = append(failed, fmt.Sprintf("%s: %s", a.Peer, errorText(ierr)))
				continue
			}
			out.Invited = append(out.Invited, a.Peer.String())
		}
		if len(failed) > 0 {
			err = fmt.Errorf("room %s is open, but some members could not be invited: %s", out.RoomID, strings.Join(failed, "; "))
		}
	}
	r, o, e := finish(ctx, s, agent, &out, fmt.Sprintf("Room %q is open: room_id %s. Invited nodes: %v.", in.Name, out.RoomID, out.Invited), err)
	return r, *o, e
}

func (s *Server) invite(ctx context.Context, _ *sdk.CallToolRequest, in InviteIn) (*sdk.CallToolResult, IDOut, error) {
	var out IDOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	var a identity.AgentAddr
	if err == nil {
		a, err = s.target(in.Member)
	}
	if err == nil && a.Peer == "" {
		err = fmt.Errorf("%q is an agent of your own node: it needs no invite; address it in the room with parley_ask", in.Member)
	}
	if err == nil {
		var res localapi.EventID
		res, err = s.api.Invite(ctx, in.Room, a.Peer.String(), string(agent))
		out.ID, out.Room = res.ID, in.Room
	}
	r, o, e := finish(ctx, s, agent, &out, fmt.Sprintf("Invited %s into room %s.", in.Member, in.Room), err)
	return r, *o, e
}

func (s *Server) say(ctx context.Context, _ *sdk.CallToolRequest, in SayIn) (*sdk.CallToolResult, IDOut, error) {
	var out IDOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	if err == nil && in.Room == "" {
		err = fmt.Errorf("room is required (see parley_read for your rooms)")
	}
	if err == nil {
		var res localapi.EventID
		res, err = s.api.Say(ctx, in.Room, localapi.SayRequest{Text: in.Text, Agent: string(agent)})
		out.ID, out.Room = res.ID, in.Room
		if err == nil {
			_ = s.api.JoinInbox(ctx, string(agent), in.Room)
		}
	}
	r, o, e := finish(ctx, s, agent, &out, "Posted: id "+out.ID, err)
	return r, *o, e
}

func toMessage(v rooms.View) Message {
	m := Message{ID: v.ID.String(), Room: string(v.Room), From: string(v.Agent) + "@" + v.Author.String(),
		Kind: string(v.Kind), Text: v.Text, To: v.To, Time: time.UnixMilli(v.Time).UTC().Format(time.RFC3339)}
	if v.ReplyTo != nil {
		m.ReplyTo = v.ReplyTo.String()
	}
	switch v.Kind {
	case rooms.KindInvite:
		m.Text = "invited node " + v.Target.String()
	case rooms.KindCreate:
		m.Text = "created the room " + v.Text
	case rooms.KindJoin, rooms.KindLeave:
		m.Text = string(v.Kind) + "ed"
	}
	return m
}

func (s *Server) read(ctx context.Context, _ *sdk.CallToolRequest, in ReadIn) (*sdk.CallToolResult, ReadOut, error) {
	var out ReadOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	if err == nil {
		var res localapi.ReadResponse
		res, err = s.api.ReadInbox(ctx, string(agent), in.Room, in.Limit)
		for _, v := range res.Messages {
			out.Messages = append(out.Messages, toMessage(v))
		}
		out.More = res.More
	}
	if out.Messages == nil {
		out.Messages = []Message{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d unread:", len(out.Messages))
	for _, m := range out.Messages {
		fmt.Fprintf(&b, "\n[%s] %s in %s (%s): %s", m.ID, m.From, m.Room, m.Kind, m.Text)
	}
	if out.More {
		b.WriteString("\n(more: call parley_read again)")
	}
	r, o, e := finish(ctx, s, agent, &out, b.String(), err)
	return r, *o, e
}

func waitFor(sec int) time.Duration {
	switch {
	case sec <= 0:
		return 30 * time.Second
	case sec > MaxWaitSeconds:
		return MaxWaitSeconds * time.Second
	}
	return time.Duration(sec) * time.Second
}

// roomWith finds a room shared with peer p (for asks without a room), or
// makes one and invites p.
func (s *Server) roomWith(ctx context.Context, agent identity.AgentName, self string, to identity.AgentAddr) (string, error) {
	rs, err := s.api.Rooms(ctx)
	if err != nil {
		return "", err
	}
	want := self
	if to.Peer != "" {
		want = to.Peer.String()
	}
	for _, r := range rs {
		members := map[string]bool{}
		for _, m := range r.Members {
			members[m.String()] = true
		}
		if members[want] && members[self] && len(members) <= 2 {
			return string(r.ID), nil
		}
	}
	name := fmt.Sprintf("%s ↔ %s", agent, to.Name)
	res, err := s.api.CreateRoom(ctx, name, string(agent))
	if err != nil {
		return "", err
	}
	if want != self {
		if _, err := s.api.Invite(ctx, res.RoomID, want, string(agent)); err != nil {
			return "", err
		}
	}
	return res.RoomID, nil
}

func (s *Server) ask(ctx context.Context, _ *sdk.CallToolRequest, in AskIn) (*sdk.CallToolResult, AskOut, error) {
	var out AskOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	if err == nil && strings.TrimSpace(in.Text) == "" {
		err = fmt.Errorf("text is required: what do you want to ask?")
	}
	if err == nil && in.To == "" && in.Room == "" {
		err = fmt.Errorf("say whom to ask: to (NAME@PEER_ID) or room")
	}
	var to identity.AgentAddr
	if err == nil && in.To != "" {
		to, err = identity.ParseAgentAddr(in.To)
		if err != nil {
			err = fmt.Errorf("to: %v (use NAME@PEER_ID, or NAME for an agent of your node)", err)
		}
	}
	var self localapi.Info
	if err == nil {
		self, err = s.api.ID(ctx)
	}
	if err == nil && in.To != "" {
		err = s.checkAlive(ctx, self.PeerID, to)
	}
	room := in.Room
	if err == nil && room == "" {
		room, err = s.roomWith(ctx, agent, self.PeerID, to)
	}
	if err == nil {
		var res localapi.EventID
		req := localapi.SayRequest{Text: in.Text, Agent: string(agent)}
		if in.To != "" {
			req.To = to.String()
		}
		res, err = s.api.Say(ctx, room, req)
		out.AskID, out.Room = res.ID, room
	}
	var skip []string
	if err == nil {
		_ = s.api.JoinInbox(ctx, string(agent), room)
		out.Reply, err = s.waitReply(ctx, out.AskID, waitFor(in.WaitSeconds))
		if out.Reply != nil {
			skip = append(skip, out.Reply.ID)
		}
	}
	text := s.askText(&out)
	r, o, e := finish(ctx, s, agent, &out, text, err, skip...)
	return r, *o, e
}

// checkAlive refuses an ask to an agent that is known not to exist: an
// agent of this node that is not registered, or an agent missing from a
// node whose agents this node does see (a contact's presence). When the
// node tells nothing about the target's node, the ask goes out.
func (s *Server) checkAlive(ctx context.Context, self string, to identity.AgentAddr) error {
	node := self
	if to.Peer != "" {
		node = to.Peer.String()
	}
	// Presence from another node lags a change by a second or two: look
	// again for a short while before calling an agent missing.
	deadline := time.Now().Add(4 * time.Second)
	for {
		var who []struct {
			PeerID string `json:"peer_id"`
			Agent  string `json:"agent"`
		}
		if err := s.api.Do(ctx, "GET", "/v1/who", nil, &who); err != nil {
			return nil // presence unavailable: cannot tell
		}
		seen := false
		for _, w := range who {
			if w.PeerID != node {
				continue
			}
			seen = true
			if w.Agent == string(to.Name) {
				return nil
			}
		}
		if !seen && node != self {
			return nil // this node sees nothing of that node's agents
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no agent %q is alive on node %s: parley_who lists the agents you can reach (or post with parley_say in a shared room for it to read later)", to.Name, node)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (s *Server) waitReply(ctx context.Context, ask string, d time.Duration) (*Reply, error) {
	// The HTTP call may take the whole wait: give it a little more.
	ctx, cancel := context.WithTimeout(ctx, d+10*time.Second)
	defer cancel()
	res, err := s.api.WaitReply(ctx, ask, d)
	if err != nil || res.Reply == nil {
		return nil, err
	}
	v := *res.Reply
	return &Reply{ID: v.ID.String(), From: string(v.Agent) + "@" + v.Author.String(), Text: v.Text}, nil
}

func (s *Server) askText(out *AskOut) string {
	if out.Reply != nil {
		return fmt.Sprintf("Reply from %s (id %s):\n%s", out.Reply.From, out.Reply.ID, out.Reply.Text)
	}
	if out.AskID == "" {
		return ""
	}
	out.Next = fmt.Sprintf(`parley_wait {"ask_id":%q,"wait_seconds":%d}`, out.AskID, MaxWaitSeconds)
	return fmt.Sprintf("No reply yet to ask %s in room %s. To keep waiting call %s; the reply will also show in your pending items.",
		out.AskID, out.Room, out.Next)
}

func (s *Server) wait(ctx context.Context, _ *sdk.CallToolRequest, in WaitIn) (*sdk.CallToolResult, AskOut, error) {
	var out AskOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	d := waitFor(in.WaitSeconds)
	var skip []string
	text := ""
	if err == nil && in.AskID != "" {
		out.AskID = in.AskID
		var v rooms.View
		v, err = s.api.Event(ctx, in.AskID)
		out.Room = string(v.Room)
		if err == nil {
			out.Reply, err = s.waitReply(ctx, in.AskID, d)
		}
		if out.Reply != nil {
			skip = append(skip, out.Reply.ID)
		}
		text = s.askText(&out)
	} else if err == nil {
		// Wait for anything new; finish then hands it out.
		wctx, cancel := context.WithTimeout(ctx, d+10*time.Second)
		var p inbox.Pending
		p, err = s.api.WaitInbox(wctx, string(agent), d)
		cancel()
		if err == nil {
			out.Envelope.Pending, out.Envelope.More = convert(p, nil)
			text = "Nothing new."
			if len(out.Envelope.Pending) > 0 || len(out.Envelope.More) > 0 {
				text = "New for you:" + renderPending(out.Envelope.Pending, out.Envelope.More)
			}
		}
		res := &sdk.CallToolResult{}
		if err != nil {
			out.Error = errorText(err)
			res.IsError = true
			text = "Error: " + out.Error
		}
		if out.Envelope.Pending == nil {
			out.Envelope.Pending = []PendingItem{}
		}
		res.Content = []sdk.Content{&sdk.TextContent{Text: text}}
		return res, out, nil
	}
	r, o, e := finish(ctx, s, agent, &out, text, err, skip...)
	return r, *o, e
}

func (s *Server) reply(ctx context.Context, _ *sdk.CallToolRequest, in ReplyIn) (*sdk.CallToolResult, IDOut, error) {
	var out IDOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	var orig rooms.View
	if err == nil && (in.MessageID == "" || strings.TrimSpace(in.Text) == "") {
		err = fmt.Errorf("message_id and text are required")
	}
	if err == nil {
		orig, err = s.api.Event(ctx, in.MessageID)
	}
	if err == nil {
		var res localapi.EventID
		res, err = s.api.Say(ctx, string(orig.Room), localapi.SayRequest{Text: in.Text, Agent: string(agent), ReplyTo: in.MessageID})
		out.ID, out.Room = res.ID, string(orig.Room)
		if err == nil {
			_ = s.api.JoinInbox(ctx, string(agent), out.Room)
		}
	}
	r, o, e := finish(ctx, s, agent, &out, fmt.Sprintf("Replied: id %s in room %s.", out.ID, out.Room), err)
	return r, *o, e
}

func (s *Server) leave(ctx context.Context, _ *sdk.CallToolRequest, in LeaveIn) (*sdk.CallToolResult, IDOut, error) {
	var out IDOut
	agent, err := s.agentFor(ctx, in.ThreadID)
	if err == nil {
		var res localapi.EventID
		res, err = s.api.Leave(ctx, in.Room, string(agent))
		out.ID, out.Room = res.ID, in.Room
	}
	r, o, e := finish(ctx, s, agent, &out, "Left room "+in.Room+".", err)
	return r, *o, e
}
