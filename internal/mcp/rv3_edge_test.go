package mcp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Review rv3: a thread_id is scoped to the node, not to the MCP session
// that passes it. Two sessions whose models pass the same thread_id (a
// model fills an optional field with "main" or "default") become one
// agent: they share its name and its inbox, and each takes the other's
// asks and messages.
func TestRV3ThreadIDOfTwoSessionsIsTwoAgents(t *testing.T) {
	nt := nodetest.Start(t, 1)
	s1, s2 := connect(t, nt, 0, "session-one"), connect(t, nt, 0, "session-two")
	o1, _ := call(t, s1, "parley_register", map[string]any{"thread_id": "main"})
	o2, _ := call(t, s2, "parley_register", map[string]any{"thread_id": "main"})
	if o1["agent"] == o2["agent"] {
		t.Fatalf("two MCP sessions passing thread_id \"main\" are one agent, %v: each reads the other's inbox", o1["agent"])
	}
}

// Review rv3: one MCP session can register as many agents as it passes
// thread_ids, and keeps each alive with its heartbeat: 64 calls fill the
// node (discovery.MaxAgents), and no other session can register.
func TestRV3ThreadIDsCannotFillTheNode(t *testing.T) {
	nt := nodetest.Start(t, 1)
	greedy := connect(t, nt, 0, "greedy")
	for i := range discovery.MaxAgents {
		if _, text, isErr := try(t, greedy, "parley_who", map[string]any{"thread_id": fmt.Sprintf("t%d", i)}); isErr {
			t.Logf("thread %d refused: %s", i, text)
			break
		}
	}
	// Another client's session (a new Claude Code window): its parley mcp
	// binds it first, and exits when that fails.
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "other", Fallback: "honest", Client: "claude-code", TTLSeconds: 60}); err != nil {
		t.Fatalf("one MCP session's thread_ids took every agent slot of the node; another session cannot register: %v", err)
	}
}
