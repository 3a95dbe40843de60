package localapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The ways a session can be woken (WakeWaitRequest.Kind and
// TerminalRequest), in the order the node tries them.
const (
	// WakeStop is a hook waiter that wakes an idle session (Claude Code's
	// Stop hook with asyncRewake).
	WakeStop = "stop"
	// WakeAppServer is a Codex thread driven through `codex app-server`
	// (turn/start when idle, turn/steer when busy).
	WakeAppServer = "appserver"
	// WakeChannel is an MCP server that pushes into its session (Claude
	// Code's claude/channel notifications).
	WakeChannel = "channel"
	// WakeTerminal is a tmux pane the node pastes into when it is idle.
	WakeTerminal = "terminal"
)

// WakeWaitRequest waits, as a session's wake-up route, until the node has
// items for the session to be woken with.
type WakeWaitRequest struct {
	Kind    string  // WakeStop, WakeAppServer or WakeChannel
	Session string  // the client's session key; a newer waiter of the same session and kind supersedes the older
	Seconds float64 // at most MaxWait
	// After is the Seq of the Wake that answered this waiter's previous
	// wait, when it waits again (zero the first time). The node answers
	// Superseded at once when what would have ended the previous route
	// came since: a newer waiter of the same session and kind, or, for a
	// stop waiter, the session working again (WakeBusy). A waiter that
	// waits in a loop so loses nothing that lands between two of its
	// waits. The first wait is never ended by what came before it.
	After uint64
	// Waiter is a key the waiting loop picks at random once and gives in
	// each of its waits (at most 256 bytes; empty: none). A wait of its own
	// whose answer it never got (the wait failed on its side, or it gave
	// up) is no newer waiter to it: only another waiter's registration, or
	// the session's busy call, since its previous answer ends its next
	// wait. Without one, its own failed wait ends it as a newer waiter's
	// would.
	Waiter string
}

// Wake is what a wake-up route is handed: the owed items (asks and
// invitations) it should wake its session for. An empty Wake means the wait
// passed; Superseded means a newer waiter of the same session took over (or
// the session is busy again) and this one should end.
type Wake struct {
	Items      []Item `json:"items"`
	Superseded bool   `json:"superseded,omitempty"`
	// Seq marks the route that was answered, for the waiter's next wait
	// (WakeWaitRequest.After). Zero from a node that does not mark them.
	Seq uint64 `json:"seq,omitempty"`
}

// SessionRef names a session of an agent.
type SessionRef struct {
	Session string `json:"session"`
}

// TerminalRequest makes a tmux pane an agent's wake-up route: the node
// pastes the wake text there when the agent is idle at its empty prompt.
type TerminalRequest struct {
	Socket string `json:"socket"` // the tmux server's socket path
	Pane   string `json:"pane"`   // the pane ID, e.g. "%3"
	Prompt string `json:"prompt"` // the agent's empty prompt line, as the screen shows it (learned from its first quiet screen)
	// Pattern, when set, is a regular expression (Go syntax) that matches
	// the agent's empty prompt line (a person's `parley run --prompt`, or
	// the one run knows for the agent's client); Prompt is not used then.
	// Without it the node learns the prompt again once Prompt proves to
	// have been a question the program asked before its prompt.
	Pattern string `json:"pattern,omitempty"`
	// Session is the session key the agent was bound with: a restarted
	// node binds it again to re-register the agent while the pane lives.
	Session string `json:"session,omitempty"`
}

// WakeStatus is what the node knows of an agent's wake-ups.
type WakeStatus struct {
	Agent  string   `json:"agent"`
	Routes []string `json:"routes"` // kinds of the routes it has now
	// Unreached counts owed items no route got the agent to read within
	// the limit: its human is told.
	Unreached int `json:"unreached"`
	// Idle is set while a session of the agent has said it waits for its
	// person (Codex's notify) and it has not worked or read since.
	Idle bool `json:"idle,omitempty"`
}

// Waker is the node's wake-up service.
type Waker interface {
	// WakeWait registers a route and waits for items for it.
	WakeWait(ctx context.Context, agent string, req WakeWaitRequest) (Wake, error)
	// WakeBusy says a session is working again: its stop waiters end.
	WakeBusy(ctx context.Context, agent string, req SessionRef) error
	// WakeIdle says a session finished its turn and waits for its person
	// (Codex's notify): what no route can bring it goes to the human now.
	WakeIdle(ctx context.Context, agent string, req SessionRef) error
	// WakeTerminal makes a tmux pane the agent's terminal route.
	WakeTerminal(ctx context.Context, agent string, req TerminalRequest) error
	// WakeStatus lists the agents with routes or unreached items.
	WakeStatus(ctx context.Context) []WakeStatus
}

// HandleWake adds the wake-up endpoints:
//
//	GET  /v1/agents/{agent}/wake/wait?kind=&session=&seconds=&after=&waiter= → Wake (blocks)
//	POST /v1/agents/{agent}/wake/busy      SessionRef → {}
//	POST /v1/agents/{agent}/wake/idle      SessionRef → {}
//	POST /v1/agents/{agent}/wake/terminal  TerminalRequest → {}
//	GET  /v1/wake                          → [WakeStatus]
func (s *Server) HandleWake(w Waker) {
	agent := func(r *http.Request) string { return r.PathValue("agent") }
	noBody(s, "GET /v1/agents/{agent}/wake/wait", func(r *http.Request) (Wake, error) {
		d, err := waitOf(r)
		if err != nil {
			return Wake{}, err
		}
		q := r.URL.Query()
		var after uint64
		if a := q.Get("after"); a != "" {
			if after, err = strconv.ParseUint(a, 10, 64); err != nil {
				return Wake{}, BadRequest("after must be a Wake's seq")
			}
		}
		// A waiter ends when the server shuts down (which cancels every
		// request's context), not only when its client goes.
		v, err := w.WakeWait(r.Context(), agent(r), WakeWaitRequest{Kind: q.Get("kind"), Session: q.Get("session"), Seconds: d.Seconds(), After: after, Waiter: q.Get("waiter")})
		if v.Items == nil {
			v.Items = []Item{}
		}
		return v, err
	})
	withBody(s, "POST /v1/agents/{agent}/wake/busy", false, func(r *http.Request, req SessionRef) (struct{}, error) {
		return struct{}{}, w.WakeBusy(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/wake/idle", false, func(r *http.Request, req SessionRef) (struct{}, error) {
		return struct{}{}, w.WakeIdle(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/wake/terminal", false, func(r *http.Request, req TerminalRequest) (struct{}, error) {
		return struct{}{}, w.WakeTerminal(r.Context(), agent(r), req)
	})
	noBody(s, "GET /v1/wake", func(r *http.Request) ([]WakeStatus, error) { return orEmpty(w.WakeStatus(r.Context())), nil })
}

// WakeWait waits, as one of agent's wake-up routes, for items to wake its
// session with (see WakeWaitRequest).
func (c *Client) WakeWait(ctx context.Context, agent string, req WakeWaitRequest) (Wake, error) {
	var v Wake
	ctx, cancel := blocking(ctx, time.Duration(req.Seconds*float64(time.Second)))
	defer cancel()
	q := url.Values{"kind": {req.Kind}, "session": {req.Session}, "seconds": {strconv.FormatFloat(req.Seconds, 'f', 3, 64)}}
	if req.After != 0 {
		q.Set("after", strconv.FormatUint(req.After, 10))
	}
	if req.Waiter != "" {
		q.Set("waiter", req.Waiter)
	}
	return v, c.agentCall(ctx, "GET", agent, "/wake/wait?"+q.Encode(), nil, &v)
}

// WakeBusy says agent's session is working again.
func (c *Client) WakeBusy(ctx context.Context, agent, session string) error {
	return c.agentCall(ctx, "POST", agent, "/wake/busy", SessionRef{Session: session}, nil)
}

// WakeIdle says agent's session finished its turn and waits for its
// person.
func (c *Client) WakeIdle(ctx context.Context, agent, session string) error {
	return c.agentCall(ctx, "POST", agent, "/wake/idle", SessionRef{Session: session}, nil)
}

// WakeTerminal makes a tmux pane agent's terminal wake-up route.
func (c *Client) WakeTerminal(ctx context.Context, agent string, req TerminalRequest) error {
	return c.agentCall(ctx, "POST", agent, "/wake/terminal", req, nil)
}

// WakeStatus lists the agents with wake-up routes or unreached items.
func (c *Client) WakeStatus(ctx context.Context) ([]WakeStatus, error) {
	var v []WakeStatus
	return v, c.do(ctx, "GET", "/v1/wake", nil, &v)
}
