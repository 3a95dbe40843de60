package wake

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-mesh/parley/internal/agents"
)

// AgentHeartbeat is a Config.Heartbeat over the agents of a: it renews the
// agent's registration only when the route's session holds it, in the
// same step as it looks (agents.HeartbeatRequest.Session). A name another
// session took (after the route's registration went) is not the route's
// agent: beating it would keep that session's agent registered past its
// TTL, give it the state of this pane, paste asks to it into this pane,
// and never bind the route's session again; it says ErrUnregistered
// instead, and Rebind takes the name back once it is free.
func AgentHeartbeat(a *agents.Service) func(ctx context.Context, agent, session, state string) error {
	return func(ctx context.Context, agent, session, state string) error {
		req := agents.HeartbeatRequest{Session: session}
		if state != "" {
			req.State = &state
		}
		_, err := a.Heartbeat(ctx, agent, req)
		if errors.Is(err, agents.ErrUnknownAgent) || errors.Is(err, agents.ErrNameTaken) {
			return fmt.Errorf("%w: %w", ErrUnregistered, err)
		}
		return err
	}
}
