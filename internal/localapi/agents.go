package localapi

import (
	"context"
	"net/http"
	"net/url"
)

// Agents is what the node's agent service offers the local API.
type Agents interface {
	Register(ctx context.Context, req RegisterAgentRequest) (AgentInfo, error)
	Heartbeat(ctx context.Context, name string, req HeartbeatRequest) (AgentInfo, error)
	Unregister(ctx context.Context, name string) error
	List(ctx context.Context) []AgentInfo
	Who(ctx context.Context) []WhoEntry
	Find(ctx context.Context, q string) (FindResult, error)
	// Session binds a client's session to an agent and registers it with
	// the card the session had, updated by req.
	Session(ctx context.Context, req SessionRequest) (AgentInfo, error)
	// ByProcess names the live agents whose client program runs a
	// process (ProcessRequest: the process and its ancestors).
	ByProcess(ctx context.Context, req ProcessRequest) (ProcessAgents, error)
}

// HandleAgents adds the agent endpoints:
//
//	POST   /v1/sessions                SessionRequest → AgentInfo (409 if another live session holds the name)
//	POST   /v1/agents                  RegisterAgentRequest → AgentInfo (409 if another live session holds the name)
//	POST   /v1/agents/{name}/heartbeat HeartbeatRequest (body optional) → AgentInfo (404 if unknown or swept: register again)
//	DELETE /v1/agents/{name}           → {}
//	GET    /v1/agents                  → [AgentInfo] (local agents)
//	GET    /v1/who                     → [WhoEntry] (local agents, then contacts' live agents)
//	GET    /v1/find?q=QUERY            → FindResult (cards [] when nothing is found)
//	POST   /v1/agents/by-process       ProcessRequest → ProcessAgents (the agents whose client runs a process)
func (s *Server) HandleAgents(a Agents) {
	withBody(s, "POST /v1/sessions", false, func(r *http.Request, req SessionRequest) (AgentInfo, error) {
		return a.Session(r.Context(), req)
	})
	withBody(s, "POST /v1/agents", false, func(r *http.Request, req RegisterAgentRequest) (AgentInfo, error) {
		return a.Register(r.Context(), req)
	})
	withBody(s, "POST /v1/agents/{name}/heartbeat", true, func(r *http.Request, req HeartbeatRequest) (AgentInfo, error) {
		return a.Heartbeat(r.Context(), r.PathValue("name"), req)
	})
	noBody(s, "DELETE /v1/agents/{name}", func(r *http.Request) (struct{}, error) {
		return struct{}{}, a.Unregister(r.Context(), r.PathValue("name"))
	})
	withBody(s, "POST /v1/agents/by-process", false, func(r *http.Request, req ProcessRequest) (ProcessAgents, error) {
		if len(req.PIDs) > MaxProcessChain {
			return ProcessAgents{}, BadRequest("%d processes named, at most %d", len(req.PIDs), MaxProcessChain)
		}
		return a.ByProcess(r.Context(), req)
	})
	noBody(s, "GET /v1/agents", func(r *http.Request) ([]AgentInfo, error) { return orEmpty(a.List(r.Context())), nil })
	noBody(s, "GET /v1/who", func(r *http.Request) ([]WhoEntry, error) { return orEmpty(a.Who(r.Context())), nil })
	noBody(s, "GET /v1/find", func(r *http.Request) (FindResult, error) {
		res, err := a.Find(r.Context(), r.URL.Query().Get("q"))
		res.Cards = orEmpty(res.Cards)
		return res, err
	})
}

func agentPath(name, rest string) (string, error) {
	n, err := segment("the agent name", name)
	return "/v1/agents/" + n + rest, err
}

// Session binds a client's session to an agent of the node and registers
// it; the node keeps the session's name and card for its next connection.
func (c *Client) Session(ctx context.Context, req SessionRequest) (AgentInfo, error) {
	var v AgentInfo
	return v, c.do(ctx, "POST", "/v1/sessions", req, &v)
}

// AgentsByProcess names the live local agents whose client program is the
// nearest of pids (a process and its ancestors) that is any agent's client.
func (c *Client) AgentsByProcess(ctx context.Context, pids []int) (ProcessAgents, error) {
	var v ProcessAgents
	return v, c.do(ctx, "POST", "/v1/agents/by-process", ProcessRequest{PIDs: pids}, &v)
}

// RegisterAgent registers (or updates) a local agent.
func (c *Client) RegisterAgent(ctx context.Context, req RegisterAgentRequest) (AgentInfo, error) {
	var v AgentInfo
	return v, c.do(ctx, "POST", "/v1/agents", req, &v)
}

// Heartbeat keeps a local agent alive and may set its state and what it
// works on. An *Error with code CodeUnknownAgent means it was swept:
// register it again.
func (c *Client) Heartbeat(ctx context.Context, name string, req HeartbeatRequest) (AgentInfo, error) {
	var v AgentInfo
	p, err := agentPath(name, "/heartbeat")
	if err != nil {
		return v, err
	}
	return v, c.do(ctx, "POST", p, req, &v)
}

// UnregisterAgent removes a local agent and withdraws its card.
func (c *Client) UnregisterAgent(ctx context.Context, name string) error {
	p, err := agentPath(name, "")
	if err != nil {
		return err
	}
	return c.do(ctx, "DELETE", p, nil, nil)
}

// Agents lists the local agents.
func (c *Client) Agents(ctx context.Context) ([]AgentInfo, error) {
	var v []AgentInfo
	return v, c.do(ctx, "GET", "/v1/agents", nil, &v)
}

// Who lists the live local agents and contacts' live agents.
func (c *Client) Who(ctx context.Context) ([]WhoEntry, error) {
	var v []WhoEntry
	return v, c.do(ctx, "GET", "/v1/who", nil, &v)
}

// Find looks agents up through the DHT by handle, agent name or capability
// ("cap:go", "agent:NAME", "handle:NAME" or a free word), saying how many
// cards it left out over the search's limits.
func (c *Client) Find(ctx context.Context, q string) (FindResult, error) {
	v := FindResult{Cards: []CardView{}}
	return v, c.do(ctx, "GET", "/v1/find?"+url.Values{"q": {q}}.Encode(), nil, &v)
}
