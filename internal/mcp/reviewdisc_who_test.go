package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/node/nodetest"
)

// parley_who lists every live agent of every contact, each with what it
// works on (500 characters at most) and its capabilities, with no budget:
// the result grows with the contacts' agents. Two contacts, each with 40
// agents that say what they work on (each contact's presence well under
// its 64 KiB), make one parley_who result of some 150 KB, past what a
// client takes in one tool result (Claude Code refuses results over 25,000
// tokens, about 100 KB), so the agent's main look at the mesh fails while
// the contacts run. parley_read and parley_board keep a budget for the
// same reason.
func TestReviewWhoOfContactsWithManyAgentsStaysSmall(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	nt.Befriend(t, 2, 0)
	ctx := context.Background()
	const per = 40
	for _, i := range []int{1, 2} {
		for k := range per {
			var caps []string
			for j := range 20 {
				caps = append(caps, fmt.Sprintf("skill-%02d-%s", j, strings.Repeat("s", 20)))
			}
			if _, err := nt.Node(i).Agents().Register(ctx, agents.RegisterRequest{
				Name: fmt.Sprintf("worker-%02d", k), Capabilities: caps, TTLSeconds: 600,
				WorkingOn: fmt.Sprintf("task %d: ", k) + strings.Repeat("refactor the parser and its tests ", 14),
			}); err != nil {
				t.Fatalf("node %d agent %d: %v", i, k, err)
			}
		}
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		n := 0
		for _, e := range nt.Node(0).Agents().Who(ctx) {
			if !e.Local {
				n++
			}
		}
		return n == 2*per
	}, "node 0 to see its contacts' agents")
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	out, _, structured, text := sizes(t, a, "parley_who", map[string]any{})
	if structured+text > 100_000 {
		t.Fatalf("parley_who with two contacts of %d agents each: %d agents listed, %d bytes of structured output and %d of text in one tool result",
			per, len(out["agents"].([]any)), structured, text)
	}
}
