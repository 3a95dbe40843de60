package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/parley-mesh/parley/internal/agents"
)

// Agents is what the node's agent service offers the local API;
// *agents.Service implements it.
type Agents interface {
	Register(ctx context.Context, req agents.RegisterRequest) (agents.Info, error)
	Heartbeat(ctx context.Context, name string, req agents.HeartbeatRequest) (agents.Info, error)
	Unregister(ctx context.Context, name string) error
	List() []agents.Info
	Who(ctx context.Context) []agents.WhoEntry
	Find(ctx context.Context, q string) ([]agents.CardView, error)
}

var _ Agents = (*agents.Service)(nil)

// The agent types of the local API (defined in internal/agents).
type (
	// RegisterAgentRequest registers or updates a local agent session:
	// {"name","role","working_on","capabilities","client","session","ttl_seconds"}.
	RegisterAgentRequest = agents.RegisterRequest
	// HeartbeatRequest keeps an agent alive: {"state"?, "working_on"?}.
	HeartbeatRequest = agents.HeartbeatRequest
	// AgentInfo is a local agent: {name, role, working_on, capabilities,
	// client, session, state, last_seen, expires}.
	AgentInfo = agents.Info
	// WhoEntry is a live agent, local or a contact's: {peer_id, handle,
	// agent, state, working_on, last_seen, local, role, capabilities}.
	WhoEntry = agents.WhoEntry
	// CardView is a public agent card: {peer_id, handle, agent, role,
	// capabilities, client, expires}.
	CardView = agents.CardView
)

// HandleAgents adds the agent endpoints:
//
//	POST   /v1/agents                  RegisterAgentRequest → AgentInfo (409 if another live session holds the name)
//	POST   /v1/agents/{name}/heartbeat HeartbeatRequest (body optional) → AgentInfo (404 if unknown or swept: register again)
//	DELETE /v1/agents/{name}           → {}
//	GET    /v1/agents                  → [AgentInfo] (local agents)
//	GET    /v1/who                     → [WhoEntry] (local agents, then contacts' live agents)
//	GET    /v1/find?q=QUERY            → [CardView] ([] when nothing is found)
func (s *Server) HandleAgents(a Agents) {
	s.mux.HandleFunc("POST /v1/agents", func(w http.ResponseWriter, r *http.Request) {
		var req RegisterAgentRequest
		if !ReadJSON(w, r, &req) {
			return
		}
		info, err := a.Register(r.Context(), req)
		if err != nil {
			WriteError(w, agentsError(err))
			return
		}
		WriteJSON(w, info)
	})
	s.mux.HandleFunc("POST /v1/agents/{name}/heartbeat", func(w http.ResponseWriter, r *http.Request) {
		var req HeartbeatRequest
		if !readOptionalJSON(w, r, &req) {
			return
		}
		info, err := a.Heartbeat(r.Context(), r.PathValue("name"), req)
		if err != nil {
			WriteError(w, agentsError(err))
			return
		}
		WriteJSON(w, info)
	})
	s.mux.HandleFunc("DELETE /v1/agents/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Unregister(r.Context(), r.PathValue("name")); err != nil {
			WriteError(w, agentsError(err))
			return
		}
		WriteJSON(w, struct{}{})
	})
	s.mux.HandleFunc("GET /v1/agents", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, a.List())
	})
	s.mux.HandleFunc("GET /v1/who", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, a.Who(r.Context()))
	})
	s.mux.HandleFunc("GET /v1/find", func(w http.ResponseWriter, r *http.Request) {
		cards, err := a.Find(r.Context(), r.URL.Query().Get("q"))
		if err != nil {
			WriteError(w, agentsError(err))
			return
		}
		WriteJSON(w, cards)
	})
}

// readOptionalJSON is ReadJSON for a body that may be empty.
func readOptionalJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, MaxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		WriteError(w, Errorf(http.StatusBadRequest, "bad_request", "bad request body: %v", err))
		return false
	}
	return true
}

// agentsError gives agent errors an HTTP status and a code.
func agentsError(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, agents.ErrBadInput):
		return Errorf(http.StatusBadRequest, "bad_request", "%v", err)
	case errors.Is(err, agents.ErrUnknownAgent):
		return Errorf(http.StatusNotFound, "unknown_agent", "%v", err)
	case errors.Is(err, agents.ErrNameTaken):
		return Errorf(http.StatusConflict, "name_taken", "%v", err)
	case errors.Is(err, agents.ErrTooManyAgents):
		return Errorf(http.StatusTooManyRequests, "too_many_agents", "%v", err)
	case errors.Is(err, agents.ErrClosed):
		return Errorf(http.StatusServiceUnavailable, "closed", "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Errorf(http.StatusGatewayTimeout, "timeout", "%v", err)
	}
	return err
}

// Client side.

func agentPath(name, rest string) string { return "/v1/agents/" + url.PathEscape(name) + rest }

// RegisterAgent registers (or updates) a local agent session.
func (c *Client) RegisterAgent(ctx context.Context, req RegisterAgentRequest) (AgentInfo, error) {
	var v AgentInfo
	return v, c.Do(ctx, "POST", "/v1/agents", req, &v)
}

// Heartbeat keeps a local agent alive and may set its state and what it
// works on. A 404 *Error (code "unknown_agent") means it was swept:
// register it again.
func (c *Client) Heartbeat(ctx context.Context, name string, req HeartbeatRequest) (AgentInfo, error) {
	var v AgentInfo
	return v, c.Do(ctx, "POST", agentPath(name, "/heartbeat"), req, &v)
}

// UnregisterAgent removes a local agent and withdraws its card.
func (c *Client) UnregisterAgent(ctx context.Context, name string) error {
	return c.Do(ctx, "DELETE", agentPath(name, ""), nil, nil)
}

// Agents lists the local agents.
func (c *Client) Agents(ctx context.Context) ([]AgentInfo, error) {
	var v []AgentInfo
	return v, c.Do(ctx, "GET", "/v1/agents", nil, &v)
}

// Who lists the live local agents and contacts' live agents.
func (c *Client) Who(ctx context.Context) ([]WhoEntry, error) {
	var v []WhoEntry
	return v, c.Do(ctx, "GET", "/v1/who", nil, &v)
}

// Find looks agents up through the DHT by handle, agent name or capability
// ("cap:go", "agent:NAME", "handle:NAME" or a free word).
func (c *Client) Find(ctx context.Context, q string) ([]CardView, error) {
	v := []CardView{}
	return v, c.Do(ctx, "GET", "/v1/find?"+url.Values{"q": {q}}.Encode(), nil, &v)
}
