package mcp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestAskFloodFromAPeerKeepsToolResultsSmall: a member node (its agent
// post limit is its own to lift: a hostile node runs its own build) posts
// many one-character asks at an agent of another node. Every tool result
// of that agent must stay within what clients take (Claude Code refuses a
// result over 25,000 tokens, about 100 KB): the asks shown in full, and
// the reminders on every later result, are bounded as the other pending
// items are. A result refused whole by the client is confirmed all the
// same once written, so a legitimate ask among the flood is gone unseen,
// and every later result of the agent is refused too, for the hour the
// asks are owed.
func TestAskFloodFromAPeerKeepsToolResultsSmall(t *testing.T) {
	t.Skip("finding: a peer's 1,500 one-character asks make the agent's next tool result some 2 MB (asks in full count only their raw text against inbox.PendingBudget) and every later one some 1.3 MB (reminders are not counted at all): past what clients take, for the asks' hour")
	nt, _, b, room := twoAgents(t)
	call(t, b, "parley_read", map[string]any{}) // the invitation
	ctx := context.Background()
	const n = 1500
	to := "beta@" + nt.ID(1).String()
	for k := range n {
		if _, err := nt.Node(0).Rooms().Say(ctx, identity.RoomID(room), rooms.SayArgs{Agent: "alpha", Text: fmt.Sprint(k % 10), Ask: true, To: to}); err != nil {
			t.Fatal(err)
		}
	}
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		p, err := nt.Node(1).Inbox().Peek(ctx, "beta")
		return err == nil && len(p.Items) >= n
	}, "the %d asks to reach beta", n)
	const bound = 100 << 10
	_, _, sjson, stext := sizes(t, b, "parley_register", nil)
	if sjson+stext > bound {
		t.Errorf("the result that shows the asks is %d bytes structured, %d as text: past what a client takes", sjson, stext)
	}
	_, _, sjson, stext = sizes(t, b, "parley_register", nil)
	if sjson+stext > bound {
		t.Errorf("a later result, with the reminders, is %d bytes structured, %d as text: past what a client takes", sjson, stext)
	}
}
