package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestManyInvitationsComeInSmallResults: invitations were given outside
// the take's budget (inbox.PendingBudget), all of them in one take, each
// with its room's purpose, its whole member list and its manual. An agent
// invited into 60 rooms of 30 members while it was busy (or by a contact
// that invites it into room after room) got one tool result of some
// 400 KB: past what a client takes (Claude Code refuses a result over
// 25,000 tokens, about 100 KB), and the result, written, confirmed its
// hand-out: every invitation in it (and the ask beside them) lost. Now
// invitations count against the budget like the other items, and those
// that do not fit come with the next results, each once.
func TestManyInvitationsComeInSmallResults(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx := context.Background()
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	b := connect(t, nt, 0, "b")
	rb, _ := call(t, b, "parley_register", map[string]any{"name": "beta"})
	members := []string{rb["address"].(string)}
	for i := range 12 {
		info, err := nt.Node(0).Agents().Register(ctx, agents.RegisterRequest{Name: fmt.Sprintf("member-%02d-%s", i, strings.Repeat("m", 40)), TTLSeconds: 600})
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		members = append(members, string(info.Name)+"@"+nt.ID(0).String())
	}
	const n = 40
	for i := range n {
		if _, err := nt.Node(0).Inbox().OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{
			Name:    fmt.Sprintf("room-%03d", i),
			Purpose: strings.Repeat("what this room is for, at length; ", 8),
			Members: members,
		}); err != nil {
			t.Fatalf("room %d: %v", i, err)
		}
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		res, err := nt.Node(0).Inbox().Who(ctx, "beta", localapi.AgentRequest{})
		return err == nil && len(res.Rooms) == n
	}, "beta to be invited into %d rooms", n)

	seen := map[string]int{}
	for round := 0; len(seen) < n; round++ {
		if round > n {
			t.Fatalf("after %d results beta was shown %d invitations of %d", round, len(seen), n)
		}
		out, _, structured, text := sizes(t, b, "parley_wait", map[string]any{"wait_seconds": 1})
		if structured+text > 100_000 {
			t.Fatalf("result %d: %d bytes of structured output and %d of text in one tool result, %d items",
				round, structured, text, len(out["pending"].([]any)))
		}
		for _, p := range out["pending"].([]any) {
			if p := p.(map[string]any); p["kind"] == "invitation" {
				seen[p["room"].(string)]++
			}
		}
	}
	for room, k := range seen {
		if k != 1 {
			t.Errorf("the invitation into %s was shown %d times", room, k)
		}
	}
}
