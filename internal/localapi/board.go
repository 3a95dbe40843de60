package localapi

import (
	"context"
	"net/http"
	"time"
)

// Board is the node's boards of advisory claims, for its agents.
type Board interface {
	Claim(ctx context.Context, agent string, req ClaimRequest) (ClaimResult, error)
	Release(ctx context.Context, agent string, req ReleaseRequest) (ReleaseResult, error)
	Board(ctx context.Context, agent string, req BoardRequest) (BoardView, error)
	History(ctx context.Context, agent string, req BoardRequest) (BoardHistory, error)
}

// CodeClaimed is the code of a claim refused because another agent holds
// an overlapping one (409); the message names the holder, the path, the
// expiry and the note.
const CodeClaimed = "claimed"

// CodeNotHeld is the code of a release of a path the agent does not hold
// (409).
const CodeNotHeld = "not_held"

// HandleBoard adds the board's endpoints:
//
//	POST /v1/agents/{agent}/claim          ClaimRequest → ClaimResult (blocks up to wait_seconds)
//	POST /v1/agents/{agent}/release        ReleaseRequest → ReleaseResult
//	POST /v1/agents/{agent}/board          BoardRequest → BoardView
//	POST /v1/agents/{agent}/board/history  BoardRequest → BoardHistory
func (s *Server) HandleBoard(b Board) {
	agent := func(r *http.Request) string { return r.PathValue("agent") }
	withBody(s, "POST /v1/agents/{agent}/claim", false, func(r *http.Request, req ClaimRequest) (ClaimResult, error) {
		if req.WaitSeconds < 0 || req.WaitSeconds > MaxWait.Seconds() {
			return ClaimResult{}, BadRequest("wait_seconds must be 0 to %.0f", MaxWait.Seconds())
		}
		return b.Claim(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/release", false, func(r *http.Request, req ReleaseRequest) (ReleaseResult, error) {
		return b.Release(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/board", false, func(r *http.Request, req BoardRequest) (BoardView, error) {
		return b.Board(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/board/history", false, func(r *http.Request, req BoardRequest) (BoardHistory, error) {
		return b.History(r.Context(), agent(r), req)
	})
}

// Claim puts paths on a project's board for agent; it blocks up to
// req.WaitSeconds when another agent's claim is in the way.
func (c *Client) Claim(ctx context.Context, agent string, req ClaimRequest) (ClaimResult, error) {
	ctx, cancel := blocking(ctx, time.Duration(req.WaitSeconds*float64(time.Second)))
	defer cancel()
	var out ClaimResult
	return out, c.agentCall(ctx, http.MethodPost, agent, "/claim", req, &out)
}

// Release takes agent's claims off a project's board.
func (c *Client) Release(ctx context.Context, agent string, req ReleaseRequest) (ReleaseResult, error) {
	var out ReleaseResult
	return out, c.agentCall(ctx, http.MethodPost, agent, "/release", req, &out)
}

// Board reads a project's board.
func (c *Client) Board(ctx context.Context, agent string, req BoardRequest) (BoardView, error) {
	var out BoardView
	return out, c.agentCall(ctx, http.MethodPost, agent, "/board", req, &out)
}

// BoardHistory reads a project's board history.
func (c *Client) BoardHistory(ctx context.Context, agent string, req BoardRequest) (BoardHistory, error) {
	var out BoardHistory
	return out, c.agentCall(ctx, http.MethodPost, agent, "/board/history", req, &out)
}
