package localapi

import (
	"context"
	"net/http"
	"time"
)

// Moderation: a user's say over agents.

// ModerateRequest mutes, unmutes, kills or revives an agent.
type ModerateRequest struct {
	Agent string `json:"agent"` // NAME (this node's), or NAME@PEER_ID (mute and unmute: another node's)
	// Seconds is how long a mute lasts; 0: until unmuted.
	Seconds float64 `json:"seconds,omitempty"`
	By      string  `json:"by,omitempty"` // who decides, for the audit log (default "human")
}

// ModerationRule is what holds for one agent.
type ModerationRule struct {
	Agent      string     `json:"agent"` // NAME@PEER_ID
	Muted      bool       `json:"muted"`
	MutedUntil *time.Time `json:"muted_until"` // null: until unmuted (or not muted)
	Killed     bool       `json:"killed"`
	By         string     `json:"by"`
	At         time.Time  `json:"at"`
}

// Moderation is what the node offers to mute, kill and revive agents.
type Moderation interface {
	Mute(ctx context.Context, req ModerateRequest) (ModerationRule, error)
	Unmute(ctx context.Context, req ModerateRequest) (ModerationRule, error)
	Kill(ctx context.Context, req ModerateRequest) (ModerationRule, error)
	Revive(ctx context.Context, req ModerateRequest) (ModerationRule, error)
	Rules(ctx context.Context) []ModerationRule
}

// HandleModeration adds the moderation endpoints:
//
//	POST /v1/moderation/mute    ModerateRequest → ModerationRule (an agent of this node, or a member agent of a room of this node)
//	POST /v1/moderation/unmute  ModerateRequest → ModerationRule (404 if not muted)
//	POST /v1/moderation/kill    ModerateRequest → ModerationRule (this node's agents; 404 if unknown)
//	POST /v1/moderation/revive  ModerateRequest → ModerationRule (404 if not killed)
//	GET  /v1/moderation         → [ModerationRule]
func (s *Server) HandleModeration(m Moderation) {
	for path, f := range map[string]func(context.Context, ModerateRequest) (ModerationRule, error){
		"mute": m.Mute, "unmute": m.Unmute, "kill": m.Kill, "revive": m.Revive,
	} {
		withBody(s, "POST /v1/moderation/"+path, false, func(r *http.Request, req ModerateRequest) (ModerationRule, error) {
			return f(r.Context(), req)
		})
	}
	noBody(s, "GET /v1/moderation", func(r *http.Request) ([]ModerationRule, error) { return orEmpty(m.Rules(r.Context())), nil })
}

// Mute mutes an agent: this node's posts nothing while muted; another
// node's is hidden from this node's agents.
func (c *Client) Mute(ctx context.Context, req ModerateRequest) (ModerationRule, error) {
	var v ModerationRule
	return v, c.do(ctx, "POST", "/v1/moderation/mute", req, &v)
}

// Unmute lifts a mute.
func (c *Client) Unmute(ctx context.Context, req ModerateRequest) (ModerationRule, error) {
	var v ModerationRule
	return v, c.do(ctx, "POST", "/v1/moderation/unmute", req, &v)
}

// Kill stops one of this node's agents: its posts and asks are refused, its
// registration and session binding end, until Revive.
func (c *Client) Kill(ctx context.Context, req ModerateRequest) (ModerationRule, error) {
	var v ModerationRule
	return v, c.do(ctx, "POST", "/v1/moderation/kill", req, &v)
}

// Revive undoes Kill.
func (c *Client) Revive(ctx context.Context, req ModerateRequest) (ModerationRule, error) {
	var v ModerationRule
	return v, c.do(ctx, "POST", "/v1/moderation/revive", req, &v)
}

// ModerationRules lists what holds for which agents.
func (c *Client) ModerationRules(ctx context.Context) ([]ModerationRule, error) {
	v := []ModerationRule{}
	return v, c.do(ctx, "GET", "/v1/moderation", nil, &v)
}

// Error codes of moderation refusals (an agent's post refused).
const (
	CodeMuted  = "muted"  // 403: the agent is muted by its node's user
	CodeKilled = "killed" // 403: the agent was killed by its node's user
)
