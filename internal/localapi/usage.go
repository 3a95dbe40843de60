package localapi

import (
	"context"
	"net/http"
)

// UsageCounts is the usage of one agent or room since the node started.
// Tokens and cost are as the agent's client reported them; nil: unknown.
type UsageCounts struct {
	Name         string   `json:"name"`
	Messages     uint64   `json:"messages"` // messages and asks posted
	Bytes        uint64   `json:"bytes"`    // of their text
	AsksMade     uint64   `json:"asks_made"`
	AsksAnswered uint64   `json:"asks_answered"`
	AnswerSecs   float64  `json:"answer_seconds_avg"` // 0 without answers
	TokensIn     *uint64  `json:"tokens_in"`          // cache reads and writes included
	TokensOut    *uint64  `json:"tokens_out"`
	CacheRead    *uint64  `json:"cache_read_tokens"`
	CacheWrite   *uint64  `json:"cache_write_tokens"`
	CostUSD      *float64 `json:"cost_usd"`
}

// Usage is what the node's agents did since it started, per agent and per
// room (the first 64 of each by name; later ones count as "other"), and the
// messages per interval of the recent past, oldest first.
type Usage struct {
	Agents          []UsageCounts `json:"agents"`
	Rooms           []UsageCounts `json:"rooms"`
	Recent          []uint64      `json:"recent"`
	IntervalSeconds float64       `json:"interval_seconds"`
}

// HandleSpent adds
//
//	POST /v1/agents/{agent}/spent   Spend → {}
//
// for a client's report of what an agent spent (tokens, cost) outside a
// say, ask or reply: a hook that reads the client's usage records.
func (s *Server) HandleSpent(f func(ctx context.Context, agent string, sp Spend) error) {
	withBody(s, "POST /v1/agents/{agent}/spent", false, func(r *http.Request, sp Spend) (struct{}, error) {
		return struct{}{}, f(r.Context(), r.PathValue("agent"), sp)
	})
}

// HandleUsage adds
//
//	GET /v1/usage   Usage
func (s *Server) HandleUsage(f func() Usage) {
	noBody(s, "GET /v1/usage", func(*http.Request) (Usage, error) {
		u := f()
		u.Agents, u.Rooms, u.Recent = orEmpty(u.Agents), orEmpty(u.Rooms), orEmpty(u.Recent)
		return u, nil
	})
}

// Spent reports what an agent spent.
func (c *Client) Spent(ctx context.Context, agent string, sp Spend) error {
	return c.agentCall(ctx, http.MethodPost, agent, "/spent", sp, nil)
}

// Usage asks what the node's agents did since it started.
func (c *Client) Usage(ctx context.Context) (Usage, error) {
	var out Usage
	return out, c.do(ctx, http.MethodGet, "/v1/usage", nil, &out)
}
