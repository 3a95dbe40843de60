package localapi

import (
	"context"
	"net/http"
)

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

// Spent reports what an agent spent.
func (c *Client) Spent(ctx context.Context, agent string, sp Spend) error {
	return c.agentCall(ctx, http.MethodPost, agent, "spent", sp, nil)
}
