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

// Before, parley_who listed every live agent of every contact, each with
// what it works on (500 characters at most) and all its capabilities, with
// no budget: two contacts, each with 40 agents that say what they work on
// (each contact's presence well under its 64 KiB), made one parley_who
// result of some 150 KB, past what a client takes in one tool result
// (Claude Code refuses results over 25,000 tokens, about 100 KB); now it
// lists agents within WhoBudget (what each works on cut to 200
// characters, its capabilities to 8), the caller's node's first, then
// those it shares a room with, says how many it left out, and its node
// argument lists one node's agents.
func TestWhoOfContactsWithManyAgentsStaysSmall(t *testing.T) {
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
	out, body, structured, text := sizes(t, a, "parley_who", map[string]any{})
	listed := out["agents"].([]any)
	if structured+text > 100_000 {
		t.Fatalf("parley_who with two contacts of %d agents each: %d agents listed, %d bytes of structured output and %d of text in one tool result",
			per, len(listed), structured, text)
	}
	left, _ := out["left_out"].(float64)
	if len(listed)+int(left) != 2*per+1 || left == 0 || !strings.Contains(body, "pass node") {
		t.Fatalf("parley_who: %d agents listed and %v left out of %d, text %.200q; want the rest counted and how to ask about one node", len(listed), left, 2*per+1, body)
	}
	if first := listed[0].(map[string]any); first["local"] != true {
		t.Fatalf("parley_who lists %v first; want the caller's node's agent", first["address"])
	}
	// One node's agents.
	id := nt.ID(2).String()
	out, _, _, _ = sizes(t, a, "parley_who", map[string]any{"node": id})
	listed = out["agents"].([]any)
	left, _ = out["left_out"].(float64)
	if len(listed) == 0 || len(listed)+int(left) != per {
		t.Fatalf("parley_who node %s: %d listed and %v left out; want its %d agents", id, len(listed), left, per)
	}
	for _, x := range listed {
		if addr := x.(map[string]any)["address"].(string); !strings.HasSuffix(addr, "@"+id) {
			t.Fatalf("parley_who node %s lists %s", id, addr)
		}
	}
}
