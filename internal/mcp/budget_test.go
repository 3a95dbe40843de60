package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node/nodetest"
)

// sizes calls a tool and returns its structured output, its text and the
// sizes of both as a client gets them (the structured output as JSON).
func sizes(tb testing.TB, cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, string, int, int) {
	tb.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		tb.Fatalf("%s: %v %v", name, err, res)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		tb.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatal(err)
	}
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	return out, text, len(raw), len(text)
}

// TestRoomOfLongMessagesReadInSmallResults: a contact posts twelve
// messages of 60,000 bytes. Before, the next tool result of the other
// agent carried ten of them whole in its structured output (600 KB: a
// client that refuses results over 25,000 tokens, as Claude Code does,
// refused every call of the agent's from then on), and parley_read with
// last:100 returned all twelve. Now a tool result lists no long message
// among its pending items (they wait for parley_read, and say so), and
// parley_read returns them a page of at most ReadBudget of texts at a
// time (one 60,000-byte message a page), each once, in order; last gives
// the newest that fit and says how many it left out.
func TestRoomOfLongMessagesReadInSmallResults(t *testing.T) {
	nt, a, b, room := twoAgents(t)
	call(t, b, "parley_read", map[string]any{}) // the invitation and the room's events
	const n, size = 12, 60000
	for k := range n {
		call(t, a, "parley_say", map[string]any{"room": room, "text": fmt.Sprintf("m%02d ", k) + strings.Repeat("x", size-4)})
	}
	ctx := context.Background()
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		p, err := nt.Node(1).Inbox().Peek(ctx, "beta")
		if err != nil {
			return false
		}
		unread := 0
		for _, m := range p.MoreUnread {
			unread += m.Count
		}
		return unread == n
	}, "beta to count the %d messages unread", n)
	const bound = 2*64<<10 + 16<<10 // one whole message, as text and as structured output, and the rest
	out, text, sjson, stext := sizes(t, b, "parley_register", nil)
	for _, p := range out["pending"].([]any) {
		if txt := p.(map[string]any)["text"].(string); len(txt) > inbox.MaxListedText {
			t.Fatalf("a pending item of %d bytes rides along in a tool result", len(txt))
		}
	}
	if sjson > 16<<10 || stext > 16<<10 {
		t.Fatalf("parley_register's result is %d bytes structured, %d as text", sjson, stext)
	}
	if !strings.Contains(out["notice"].(string), fmt.Sprintf("%d more to read with parley_read", n)) || !strings.Contains(text, "parley_read") {
		t.Fatalf("the result does not say %d messages wait for parley_read: notice %q\n%s", n, out["notice"], text)
	}
	var got []string
	for range 2 * n {
		out, _, sjson, stext := sizes(t, b, "parley_read", map[string]any{"room": room})
		if sjson > bound || stext > bound {
			t.Fatalf("a parley_read result is %d bytes structured, %d as text", sjson, stext)
		}
		for _, m := range out["messages"].([]any) {
			got = append(got, m.(map[string]any)["text"].(string)[:3])
		}
		if !out["has_more"].(bool) {
			break
		}
	}
	var want []string
	for k := range n {
		want = append(want, fmt.Sprintf("m%02d", k))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("parley_read gave %v, want %v", got, want)
	}
	out, text, sjson, stext = sizes(t, b, "parley_read", map[string]any{"room": room, "last": 100})
	msgs := out["messages"].([]any)
	if sjson > bound || stext > bound || len(msgs) == 0 || out["left_out"] == nil || int(out["left_out"].(float64))+len(msgs) < n {
		t.Fatalf("last 100: %d messages, left out %v, %d bytes structured, %d as text", len(msgs), out["left_out"], sjson, stext)
	}
	if last := msgs[len(msgs)-1].(map[string]any)["text"].(string); !strings.HasPrefix(last, fmt.Sprintf("m%02d", n-1)) {
		t.Fatalf("last 100 does not end with the newest message: %.10q", last)
	}
	if !strings.Contains(text, "left out") {
		t.Fatalf("last 100 does not say it left events out:\n%.300s", text)
	}
}

// TestNoticeInTheStructuredOutput: a client may give its model the
// structured output alone (Claude Code does when a tool has one), without
// the text's header lines; its notice says an ask waits, under the marker.
func TestNoticeInTheStructuredOutput(t *testing.T) {
	nt, a, b, room := twoAgents(t)
	call(t, b, "parley_read", map[string]any{})
	out, _ := call(t, a, "parley_ask", map[string]any{"to": "beta@" + nt.ID(1).String(), "room": room, "text": "ready?", "wait_seconds": 1})
	id := out["ask_id"].(string)
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		p, err := nt.Node(1).Inbox().Peek(context.Background(), "beta")
		return err == nil && slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.ID == id })
	}, "the ask to reach beta")
	out, _ = call(t, b, "parley_who", map[string]any{})
	if n, _ := out["notice"].(string); !strings.HasPrefix(n, mcp.Marker) || !strings.Contains(n, "1 ask(s)") {
		t.Fatalf("the structured output's notice does not say an ask waits: %q", n)
	}
	out, _ = call(t, b, "parley_who", map[string]any{})
	if n, _ := out["notice"].(string); strings.Contains(n, mcp.Marker) || !strings.Contains(n, "still owe 1 ask") {
		t.Fatalf("the next notice, want one reminder: %q", n)
	}
}
