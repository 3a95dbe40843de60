package node_test

import (
	"context"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// registered registers agents on the node of c for the rest of a test: a
// post as an agent its node does not know (not registered, in no room) is
// refused. human, the node's user, is always known (and never registered).
func registered(t testing.TB, ctx context.Context, c *localapi.Client, names ...string) {
	t.Helper()
	for _, n := range names {
		if n == "human" {
			continue
		}
		if _, err := c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: n, TTLSeconds: 600}); err != nil {
			t.Fatalf("register %s: %v", n, err)
		}
	}
}
