package mcp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// An agent whose tool results carry more hand-outs than inbox.MaxHands
// was within the connection's CancelGrace (each result's hand-out is
// confirmed only once that grace passed) is shown each item once: the
// hand-outs still in their grace are not offered again as unconfirmed.
// Before, past 16 open hand-outs the node offered the oldest's items again
// at once, and the next result showed them a second time.
func TestManyHandOutsWithinTheGraceShowEachItemOnce(t *testing.T) {
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.AgentPostLimit = -1
	}))
	a, b := connect(t, nt, 0, "a"), connect(t, nt, 0, "b")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	call(t, b, "parley_register", map[string]any{"name": "beta"})
	out, _ := call(t, a, "parley_room_open", map[string]any{"name": "burst", "members": []string{"beta"}})
	room := out["room_id"].(string)
	seen := map[string]int{}
	take := func() {
		out, _ := call(t, b, "parley_register", nil)
		for _, p := range out["pending"].([]any) {
			if text, _ := p.(map[string]any)["text"].(string); strings.HasPrefix(text, "burst ") {
				seen[text]++
			}
		}
	}
	const n = 40
	start := time.Now()
	for k := range n {
		msg := fmt.Sprintf("burst %02d", k)
		call(t, a, "parley_say", map[string]any{"room": room, "text": msg})
		// Each result hands out one new message: a hand-out of its own.
		nodetest.WaitFor(t, 10*time.Second, func() bool { take(); return seen[msg] > 0 }, "beta to be shown "+msg)
	}
	if d := time.Since(start); d > mcp.CancelGrace {
		t.Logf("the %d hand-outs took %v, more than the grace of %v: fewer were open together", n, d, mcp.CancelGrace)
	}
	// Past the grace every hand-out is confirmed; a result after it shows
	// nothing offered again.
	deadline := time.Now().Add(2 * mcp.CancelGrace)
	for time.Now().Before(deadline) {
		take()
	}
	for k := range n {
		if msg := fmt.Sprintf("burst %02d", k); seen[msg] != 1 {
			t.Errorf("%s shown %d times, want once", msg, seen[msg])
		}
	}
}
