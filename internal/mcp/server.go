package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
)

// Version is reported to MCP clients.
const Version = "0.1.0"

// Config configures a Server.
type Config struct {
	// Client talks to the node. Required.
	Client *localapi.Client
	// Session is this MCP session's key. Required.
	Session string
	// ClientName names the agent's client program ("claude-code", "codex",
	// …); it is part of the default agent name and of the agent card.
	ClientName string
	// Project is the project folder; its base name is part of the default
	// agent name.
	Project string
	// Logger; nil discards.
	Logger *slog.Logger
	// HeartbeatEvery is how often the agent's registration is renewed; zero
	// means 20 s (the node sweeps agents after 60 s without one).
	HeartbeatEvery time.Duration
}

// Server serves one agent session.
type Server struct {
	cfg Config
	api *localapi.Client
	log *slog.Logger

	mu      sync.Mutex // protects agent, role, working, threads
	agent   identity.AgentName
	role    string
	working string
	caps    []string
	threads map[string]identity.AgentName
}

// New returns a Server; Run binds the session and serves.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HeartbeatEvery == 0 {
		cfg.HeartbeatEvery = 20 * time.Second
	}
	return &Server{cfg: cfg, api: cfg.Client, log: cfg.Logger, threads: make(map[string]identity.AgentName)}
}

var nameJunk = regexp.MustCompile(`[^a-z0-9._-]+`)

// DefaultAgentName is client and project folder, e.g. "claude-code-api".
func DefaultAgentName(client, project string) identity.AgentName {
	s := strings.ToLower(strings.Trim(client+"-"+filepath.Base(project), "-./"))
	s = strings.Trim(nameJunk.ReplaceAllString(s, "-"), "-._")
	if len(s) > 64 {
		s = s[:64]
	}
	if _, err := identity.ParseAgentName(s); err != nil {
		return "agent"
	}
	return identity.AgentName(s)
}

// Bind maps the session to its agent (the one it had before, if any).
func (s *Server) Bind(ctx context.Context) (identity.AgentName, error) {
	res, err := s.api.Bind(ctx, localapi.BindRequest{
		Session: s.cfg.Session, Fallback: string(DefaultAgentName(s.cfg.ClientName, s.cfg.Project)),
	})
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.agent = identity.AgentName(res.Agent)
	s.mu.Unlock()
	return s.agent, nil
}

// Agent is the session's agent name.
func (s *Server) Agent() identity.AgentName {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agent
}

// agentFor returns the agent of a call: the session's, or the one bound to
// the call's thread_id.
func (s *Server) agentFor(ctx context.Context, thread string) (identity.AgentName, error) {
	if thread == "" {
		if a := s.Agent(); a != "" {
			return a, nil
		}
		return s.Bind(ctx)
	}
	s.mu.Lock()
	a, ok := s.threads[thread]
	s.mu.Unlock()
	if ok {
		return a, nil
	}
	fallback := DefaultAgentName(s.cfg.ClientName+"-"+thread, s.cfg.Project)
	res, err := s.api.Bind(ctx, localapi.BindRequest{Session: "thread:" + thread, Fallback: string(fallback)})
	if err != nil {
		return "", err
	}
	a = identity.AgentName(res.Agent)
	s.mu.Lock()
	s.threads[thread] = a
	s.mu.Unlock()
	return a, nil
}

// registerRequest is the node's agent registration (see internal/agents).
type registerRequest struct {
	Name         string   `json:"name"`
	Role         string   `json:"role,omitempty"`
	WorkingOn    string   `json:"working_on,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	Client       string   `json:"client,omitempty"`
	Session      string   `json:"session,omitempty"`
	TTLSeconds   int      `json:"ttl_seconds,omitempty"`
}

// announce registers the agent with the node (who/find and presence see it).
func (s *Server) announce(ctx context.Context) error {
	s.mu.Lock()
	req := registerRequest{Name: string(s.agent), Role: s.role, WorkingOn: s.working, Capabilities: s.caps,
		Client: s.cfg.ClientName, Session: s.cfg.Session, TTLSeconds: 60}
	s.mu.Unlock()
	return s.api.Do(ctx, "POST", "/v1/agents", req, nil)
}

// Run binds the session, registers the agent, keeps its registration alive
// and serves MCP on t until the client goes away or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	if _, err := s.Bind(ctx); err != nil {
		return fmt.Errorf("mcp: bind session: %w", err)
	}
	if err := s.announce(ctx); err != nil {
		s.log.Warn("agent registration failed", "agent", string(s.Agent()), "err", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(s.cfg.HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.announce(ctx); err != nil && ctx.Err() == nil {
					s.log.Debug("agent heartbeat failed", "err", err)
				}
			}
		}
	}()
	err := s.MCP().Run(ctx, t)
	cancel()
	wg.Wait()
	uctx, ucancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer ucancel()
	_ = s.api.Do(uctx, "DELETE", "/v1/agents/"+string(s.Agent()), nil, nil)
	return err
}

// Envelope is the part of every tool's structured output that Parley adds:
// the error, if the call failed, and the agent's pending items.
type Envelope struct {
	Error   string         `json:"error,omitempty"`
	Pending []PendingItem  `json:"pending"`
	More    map[string]int `json:"more_unread,omitempty"`
}

// PendingItem is one item for the agent, as structuredContent.pending shows it.
type PendingItem struct {
	ID      string `json:"id"`
	Room    string `json:"room"`
	From    string `json:"from"`
	Text    string `json:"text"`
	Urgent  bool   `json:"urgent"`
	Kind    string `json:"kind"`
	ReplyTo string `json:"reply_to,omitempty"`
	Answer  string `json:"answer"`
}

// withPending is implemented by every output type through Envelope.
type withPending interface{ env() *Envelope }

func (e *Envelope) env() *Envelope { return e }

// Marker is the line that tells a model someone waits on it.
const Marker = "⚠️ SOMEONE IS BLOCKED ON YOU — answer this first:"

// finish attaches the agent's pending items (and err, if any) to a tool
// result: the text says what happened, then what is pending.
func finish[Out withPending](ctx context.Context, s *Server, agent identity.AgentName, out Out, text string, err error, skip ...string) (*sdk.CallToolResult, Out, error) {
	env := out.env()
	res := &sdk.CallToolResult{}
	if err != nil {
		env.Error = errorText(err)
		text = "Error: " + env.Error
		res.IsError = true
	}
	env.Pending = []PendingItem{}
	if agent != "" {
		p, perr := s.api.Take(ctx, string(agent))
		if perr == nil {
			env.Pending, env.More = convert(p, skip)
		} else {
			s.log.Debug("take pending failed", "err", perr)
		}
	}
	text += renderPending(env.Pending, env.More)
	res.Content = []sdk.Content{&sdk.TextContent{Text: text}}
	return res, out, nil
}

func errorText(err error) string {
	var ae *localapi.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	if errors.Is(err, localapi.ErrNoNode) {
		return "the Parley node is not running (start it with `parley up`)"
	}
	return err.Error()
}

func convert(p inbox.Pending, skip []string) ([]PendingItem, map[string]int) {
	out := make([]PendingItem, 0, len(p.Items))
	for _, it := range p.Items {
		skipped := false
		for _, id := range skip {
			skipped = skipped || id == it.ID
		}
		if skipped {
			continue
		}
		out = append(out, PendingItem{ID: it.ID, Room: it.Room, From: it.From, Text: it.Text, Urgent: it.Urgent,
			Kind: it.Kind, ReplyTo: it.ReplyTo, Answer: it.Answer})
	}
	return out, p.More
}

func renderPending(items []PendingItem, more map[string]int) string {
	if len(items) == 0 && len(more) == 0 {
		return ""
	}
	var b strings.Builder
	section := func(title string, kind string) {
		first := true
		for _, it := range items {
			if it.Kind != kind {
				continue
			}
			if first {
				b.WriteString("\n\n" + title)
				first = false
			}
			fmt.Fprintf(&b, "\n• [%s %s] room %s, from %s:\n  %s\n  → %s", it.Kind, it.ID, it.Room, it.From, quote(it.Text), it.Answer)
		}
	}
	section(Marker, "ask")
	section("📨 Invitations:", "invitation")
	section("💬 Unread messages:", "message")
	for room, n := range more {
		fmt.Fprintf(&b, "\n(+%d more unread in room %s: parley_read {\"room\":%q})", n, room, room)
	}
	return b.String()
}

func quote(s string) string {
	s = strings.ReplaceAll(s, "\n", "\n  ")
	if len(s) > 2000 {
		s = s[:2000] + "… (truncated; parley_read shows all)"
	}
	return s
}

func jsonText(v any) string {
	raw, _ := json.MarshalIndent(v, "", "  ")
	return string(raw)
}
