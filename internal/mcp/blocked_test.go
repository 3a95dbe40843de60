package mcp_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node/nodetest"
)

// reads reports whether a parley_read output lists the event id among its
// messages.
func reads(out map[string]any, id string) bool {
	list, _ := out["messages"].([]any)
	return slices.ContainsFunc(list, func(m any) bool { return m.(map[string]any)["id"] == id })
}

// An ask rides along in the agent's next tool result under the line that
// says someone is blocked on it, whatever the tool, parley_read included
// (with or without a room); once answered, parley_read does not list it
// as unread again, nor does it when the ask was shown by another tool first.
func TestBlockedOnYouWhateverTheTool(t *testing.T) {
	nt, a, b, room := twoAgents(t)
	beta := "beta@" + nt.ID(1).String()
	call(t, b, "parley_read", map[string]any{}) // the invitation and the room's events
	ctx := context.Background()
	for k, first := range []map[string]any{{}, {"room": room}, nil} {
		q := []string{"first?", "second?", "third?"}[k]
		out, _ := call(t, a, "parley_ask", map[string]any{"to": beta, "room": room, "text": q, "wait_seconds": 1})
		id := out["ask_id"].(string)
		nodetest.WaitFor(t, 30*time.Second, func() bool {
			p, err := nt.Node(1).Inbox().Peek(ctx, "beta")
			return err == nil && slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.ID == id })
		}, "the ask %q to reach beta", q)
		tool, args := "parley_read", first
		if first == nil {
			tool, args = "parley_who", map[string]any{} // the ask shown by another tool first
		}
		_, text := call(t, b, tool, args)
		if !strings.Contains(text, mcp.Marker) || !strings.Contains(text, q) {
			t.Fatalf("%s %v, the first call after the ask %q, has no %q over it:\n%s", tool, args, q, mcp.Marker, text)
		}
		if tool == "parley_read" && !strings.Contains(text, "someone is blocked on you") {
			t.Fatalf("parley_read lists the ask without saying it is owed:\n%s", text)
		}
		_, text = call(t, b, "parley_register", nil)
		if strings.Contains(text, mcp.Marker) || !strings.Contains(text, "still owed") {
			t.Fatalf("the call after: want one reminder line, got:\n%s", text)
		}
		call(t, b, "parley_reply", map[string]any{"message_id": id, "text": "answer " + q})
		for _, args := range []map[string]any{{}, {"room": room}} {
			out, text := call(t, b, "parley_read", args)
			if reads(out, id) || strings.Contains(text, "still owed") {
				t.Fatalf("parley_read %v after the answer lists the ask %q again:\n%s", args, q, text)
			}
		}
	}
}
