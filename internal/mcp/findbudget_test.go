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

// Before, parley_find put every card it found into the agent's context,
// and cards come from anyone: a stranger's node (no contact of the
// searcher) with 64 agents, each announcing cap:go and 31 other
// capabilities of 64 bytes, made the answer to "cap:go" some 270 KB (text
// and structured output), past what a client takes in one tool result
// (Claude Code refuses results over 25,000 tokens, about 100 KB), and 200
// of them (a query takes 200 providers) about 55 MB; now the node's search
// keeps at most 16 cards of a node that is not a contact (256 in all,
// its own and its contacts' first), and parley_find lists cards within
// FindBudget, saying how many it left out and how to narrow the search.
func TestFindOfAStrangersManyCardsStaysSmall(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	ctx := context.Background()
	const n = 64
	for i := range n {
		caps := []string{"go"}
		for j := range 31 {
			caps = append(caps, fmt.Sprintf("x%02d-%s", j, strings.Repeat("y", 60)))
		}
		if _, err := nt.Node(1).Agents().Register(ctx, agents.RegisterRequest{
			Name: fmt.Sprintf("squat-%02d", i), Capabilities: caps, TTLSeconds: 600,
		}); err != nil {
			t.Fatalf("stranger's agent %d: %v", i, err)
		}
	}
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	// The node finds 16 of the 64 cards (its agent service, not the
	// tool); then one call of the tool.
	const kept = 16
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		cs, err := nt.Node(0).Agents().Find(ctx, "cap:go")
		if len(cs) > kept {
			t.Fatalf("the node's search keeps %d cards of one stranger's node, limit %d", len(cs), kept)
		}
		return err == nil && len(cs) == kept
	}, "the stranger's cards to be found")
	out, body, structured, text := sizes(t, a, "parley_find", map[string]any{"query": "cap:go"})
	cards := len(out["cards"].([]any))
	if structured+text > 100_000 {
		t.Fatalf("parley_find cap:go with one stranger's node of %d agents: %d cards, %d bytes of structured output and %d of text in one tool result",
			n, cards, structured, text)
	}
	left, _ := out["left_out"].(float64)
	if cards == 0 || cards+int(left) != kept || left == 0 || !strings.Contains(body, "left out") || !strings.Contains(body, "narrow the search") {
		t.Fatalf("parley_find cap:go: %d cards listed and %v left out of %d, text %.300q; want some of each, and the text to say so", cards, left, kept, body)
	}
}
