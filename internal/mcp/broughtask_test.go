package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestAskThatBringsAnAgentIntoABigRoomStaysSmall: an ask that brings its
// addressee into a room carries what the room's invitation would (its
// purpose and members). A peer's room may hold thousands of member agents
// (each a join of its own node's agent). An invitation lists 16 of them
// and counts the rest (members_left_out); the ask that stands for the
// invitation must too. Before, it listed them all in the structured
// output: 2,500 made one result of some 180 KB, which a client refuses
// whole while its hand-out is confirmed.
func TestAskThatBringsAnAgentIntoABigRoomStaysSmall(t *testing.T) {
	nt, _, b, _ := twoAgents(t)
	call(t, b, "parley_read", map[string]any{})
	ctx := context.Background()
	n0 := nt.Node(0)
	room, err := n0.Rooms().CreateRoom(ctx, "crowd", strings.Repeat("p", 200), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	const agents = 60
	for k := range agents {
		if _, err := n0.Rooms().Join(ctx, room, identity.AgentName(fmt.Sprintf("crowd-agent-%04d", k))); err != nil {
			t.Fatal(err)
		}
	}
	res, err := n0.Inbox().Ask(ctx, "alpha", localapi.AskRequest{Room: string(room), To: "beta@" + nt.ID(1).String(), Text: "quick one?", WaitSeconds: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		p, err := nt.Node(1).Inbox().Peek(ctx, "beta")
		if err != nil {
			return false
		}
		for _, it := range p.Items {
			if it.ID == res.AskID && len(it.Members) > agents {
				return true
			}
		}
		return false
	}, "the ask, with the room's %d agents, to reach beta", agents)
	out, _ := call(t, b, "parley_register", nil)
	found := false
	for _, p := range out["pending"].([]any) {
		p := p.(map[string]any)
		if p["id"] != res.AskID {
			continue
		}
		found = true
		m, _ := p["members"].([]any)
		left, _ := p["members_left_out"].(float64)
		if len(m) > 16 || len(m)+int(left) != agents+2 {
			t.Fatalf("the ask lists %d members and leaves out %v, want 16 and %d", len(m), left, agents+2-16)
		}
	}
	if !found {
		t.Fatalf("the ask is not among the pending items: %v", out["pending"])
	}
}
