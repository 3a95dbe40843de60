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

// Before, parley_who listed every room of the agent in full, with no
// budget (its agents part has WhoBudget): an agent in 120 rooms of long
// names and purposes made one result of over 100 KB, past what a client
// takes in one tool result, and more rooms made it larger without bound;
// now it lists rooms within RoomsBudget, those with unread messages
// first, and says how many it left out (parley_room_open without a name
// likewise).
func TestWhoOfAnAgentInManyRoomsStaysSmall(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx := context.Background()
	a := connect(t, nt, 0, "a")
	ra, _ := call(t, a, "parley_register", map[string]any{"name": "alpha"})
	const n = 120
	for i := range n {
		if _, err := nt.Node(0).Inbox().OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{
			Name:    fmt.Sprintf("room-%03d-", i) + strings.Repeat("n", 180),
			Purpose: strings.Repeat("what this room is for, at length; ", 8),
		}); err != nil {
			t.Fatalf("room %d: %v", i, err)
		}
	}
	// One room has a message alpha has not seen: it comes first; it has
	// 22 members, of which 16 are listed.
	b := connect(t, nt, 0, "b")
	call(t, b, "parley_register", map[string]any{"name": "beta"})
	members := []string{ra["address"].(string)}
	for i := range 20 {
		info, err := nt.Node(0).Agents().Register(ctx, agents.RegisterRequest{Name: fmt.Sprintf("member-%02d", i), TTLSeconds: 600})
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		members = append(members, string(info.Name)+"@"+nt.ID(0).String())
	}
	call(t, b, "parley_room_open", map[string]any{"name": "news", "members": members})
	call(t, b, "parley_say", map[string]any{"room": "news", "text": "fresh"})
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		res, err := nt.Node(0).Inbox().Who(ctx, "alpha", localapi.AgentRequest{})
		if err != nil || len(res.Rooms) != n+1 {
			return false
		}
		for _, r := range res.Rooms {
			if r.Name == "news" && r.Unread > 0 && len(r.Members) == 22 {
				return true
			}
		}
		return false
	}, "alpha to be in %d rooms, news of 22 members unread", n+1)
	for _, tool := range []string{"parley_who", "parley_room_open"} {
		out, body, structured, text := sizes(t, a, tool, map[string]any{})
		listed := out["rooms"].([]any)
		if structured+text > 100_000 {
			t.Fatalf("%s of an agent in %d rooms: %d rooms listed, %d bytes of structured output and %d of text in one tool result",
				tool, n+1, len(listed), structured, text)
		}
		left, _ := out["rooms_left_out"].(float64)
		if len(listed) == 0 || left == 0 || len(listed)+int(left) != n+1 || !strings.Contains(body, "more rooms left out") {
			t.Fatalf("%s: %d rooms listed and %v left out of %d, text %.200q; want the rest counted and said", tool, len(listed), left, n+1, body)
		}
		first := listed[0].(map[string]any)
		if first["name"] != "news" {
			t.Fatalf("%s lists room %.40v first; want news, with a message unread", tool, first["name"])
		}
		if ms, more := first["members"].([]any), first["members_left_out"]; len(ms) != 16 || more != 6.0 || !strings.Contains(body, "and 6 more; ") {
			t.Fatalf("%s lists %d members of news and %v left out, text %.600q; want 16 and 6, and the text to say so", tool, len(ms), more, body)
		}
	}
}
