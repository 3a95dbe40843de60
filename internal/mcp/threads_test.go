package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A thread_id is one MCP session's: two sessions whose models pass the same
// one (a model fills an optional field with "main") are two agents, or each
// would read the other's inbox and take its asks. A session that comes back
// with its key finds its thread's agent again.
func TestThreadIDOfTwoSessionsIsTwoAgents(t *testing.T) {
	nt := nodetest.Start(t, 1)
	s1, s2 := connect(t, nt, 0, "session-one"), connect(t, nt, 0, "session-two")
	o1, _ := call(t, s1, "parley_register", map[string]any{"thread_id": "main", "role": "first"})
	o2, _ := call(t, s2, "parley_register", map[string]any{"thread_id": "main"})
	if o1["agent"] == o2["agent"] {
		t.Fatalf("two MCP sessions passing thread_id \"main\" are one agent, %v: each reads the other's inbox", o1["agent"])
	}
	again := connect(t, nt, 0, "session-one")
	if o3, _ := call(t, again, "parley_register", map[string]any{"thread_id": "main"}); o3["agent"] != o1["agent"] {
		t.Fatalf("session-one's thread \"main\" is %v when the session comes back, not %v", o3["agent"], o1["agent"])
	}
}

// One MCP session holds at most mcp.MaxThreads thread agents: passing new
// thread_ids must not take every agent place of the node (64), or no
// other session can register. A thread it holds still answers past the cap.
func TestThreadIDsCannotFillTheNode(t *testing.T) {
	nt := nodetest.Start(t, 1)
	greedy := connect(t, nt, 0, "greedy")
	refused := -1
	for i := range mcp.MaxThreads + 4 {
		if _, text, isErr := try(t, greedy, "parley_who", map[string]any{"thread_id": fmt.Sprintf("t%d", i)}); isErr {
			if !strings.Contains(text, "thread agents") {
				t.Fatalf("thread %d refused with an unclear error: %s", i, text)
			}
			refused = i
			break
		}
	}
	if refused != mcp.MaxThreads {
		t.Fatalf("the session's first refused thread is t%d, not t%d (MaxThreads)", refused, mcp.MaxThreads)
	}
	if _, text, isErr := try(t, greedy, "parley_who", map[string]any{"thread_id": "t0"}); isErr {
		t.Fatalf("a thread the session holds is refused past the cap: %s", text)
	}
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "other", Fallback: "honest", Client: "claude-code", TTLSeconds: 60}); err != nil {
		t.Fatalf("another session cannot register: %v", err)
	}
}
