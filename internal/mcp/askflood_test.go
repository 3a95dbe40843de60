package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
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
// asks are owed. Before, the first result was some 2 MB and every later
// one some 1.3 MB.
//
// A third node's asks, sent after the flood, are not held back behind
// it: the asks shown in full and the reminders are taken in turns by
// asking node, so each comes with the agent's next result.
func TestAskFloodFromAPeerKeepsToolResultsSmall(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		c.AgentPostLimit = -1 // the flood posts as fast as it can
	}))
	nt.ConnectAll()
	nt.WaitFor(20*time.Second, func() bool {
		return nt.Node(0).Host().Network().Connectedness(nt.ID(1)) == network.Connected &&
			nt.Node(0).Host().Network().Connectedness(nt.ID(2)) == network.Connected
	}, "the nodes to connect")
	a, b, c := connect(t, nt, 0, "a"), connect(t, nt, 1, "b"), connect(t, nt, 2, "c")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	rb, _ := call(t, b, "parley_register", map[string]any{"name": "beta"})
	rc, _ := call(t, c, "parley_register", map[string]any{"name": "gamma"})
	out, _ := call(t, a, "parley_room_open", map[string]any{"name": "flood", "members": []string{rb["address"].(string), rc["address"].(string)}})
	room := out["room_id"].(string)
	if failed := out["failed"].([]any); len(failed) > 0 {
		t.Fatalf("room_open: %v", failed)
	}
	for _, s := range []*sdk.ClientSession{b, c} {
		nodetest.WaitFor(t, 20*time.Second, func() bool {
			_, _, isErr := try(t, s, "parley_read", map[string]any{"room": room})
			return !isErr
		}, "the members to have the room")
	}
	ctx := context.Background()
	const n = 1500
	to := "beta@" + nt.ID(1).String()
	for k := range n {
		if _, err := nt.Node(0).Rooms().Say(ctx, identity.RoomID(room), rooms.SayArgs{Agent: "alpha", Text: fmt.Sprint(k % 10), Ask: true, To: to}); err != nil {
			t.Fatal(err)
		}
	}
	owed := func(want int) {
		t.Helper()
		nodetest.WaitFor(t, 60*time.Second, func() bool {
			asks, _, err := nt.Node(1).Inbox().Waiting(ctx, "beta")
			return err == nil && asks >= want
		}, "the %d asks to reach beta", want)
	}
	owed(n)
	gammaAsks := func(text string) {
		t.Helper()
		if _, err := nt.Node(2).Rooms().Say(ctx, identity.RoomID(room), rooms.SayArgs{Agent: "gamma", Text: text, Ask: true, To: to}); err != nil {
			t.Fatal(err)
		}
	}
	gammaAsks("first question of gamma")
	owed(n + 1)
	const bound = 100 << 10
	out, text, sjson, stext := sizes(t, b, "parley_register", nil)
	t.Logf("the result that shows the asks: %d bytes structured, %d as text", sjson, stext)
	if sjson+stext > bound {
		t.Errorf("the result that shows the asks is %d bytes structured, %d as text: past what a client takes", sjson, stext)
	}
	shown := strings.Count(text, "[ask ")
	if left, _ := out["owed_left_out"].(float64); shown == 0 || shown+int(left) != n+1 || !strings.Contains(text, "more ask(s) you owe") {
		t.Errorf("the first result shows %d asks and counts %v left out of %d; want the rest counted, in the text too", shown, out["owed_left_out"], n+1)
	}
	if !strings.Contains(kinds(out, "ask")["gamma"], "first question of gamma") {
		t.Errorf("gamma's ask, sent after alpha's %d, is not among the %d asks of beta's next result", n, shown)
	}
	gammaAsks("second question of gamma")
	owed(n + 2)
	out, _, sjson, stext = sizes(t, b, "parley_register", nil)
	t.Logf("a later result: %d bytes structured, %d as text", sjson, stext)
	if sjson+stext > bound {
		t.Errorf("a later result, with the reminders, is %d bytes structured, %d as text: past what a client takes", sjson, stext)
	}
	if !strings.Contains(kinds(out, "ask")["gamma"], "second question of gamma") {
		t.Errorf("gamma's second ask is not among the asks of beta's next result")
	}
	if !strings.Contains(kinds(out, "reminder")["gamma"], "first question of gamma") {
		t.Errorf("gamma's first ask is not among the reminders of beta's next result")
	}
}

// kinds gives the texts of a result's pending items of a kind, by the
// sender's agent name, joined.
func kinds(out map[string]any, kind string) map[string]string {
	by := map[string]string{}
	ps, _ := out["pending"].([]any)
	for _, p := range ps {
		it, _ := p.(map[string]any)
		if it["kind"] != kind {
			continue
		}
		from, _ := it["from"].(string)
		name, _, _ := strings.Cut(from, "@")
		text, _ := it["text"].(string)
		by[name] += text + "\n"
	}
	return by
}
