package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestLongReplyComesInASmallResult: a reply to an agent's ask is given
// whole, in the text and again in the structured output, whether
// parley_ask or parley_wait returns it or it comes among the pending
// items (a take's first item is given whatever its size). A reply of
// 60,000 bytes (a diff pasted as the answer; texts go to 64 KiB) makes one
// tool result of some 120 KB, past what a client takes (Claude Code
// refuses a result over 25,000 tokens, about 100 KB), and the result,
// written, confirms its hand-out: the reply is gone for the agent, and
// parley_read {"message_id":…} gives the event whole too. What would
// close it: a reply cut as an owed ask is (manual.Clip, with the marker
// naming parley_read), and parley_read by ID paged by ReadBudget.
func TestLongReplyComesInASmallResult(t *testing.T) {
	t.Skip("known gap: a reply longer than half of what a client takes makes a tool result it refuses (docs/ARCHITECTURE.md, Known gaps)")
	nt, a := handNet(t, 0)
	ctx := context.Background()
	b := connect(t, nt, 0, "b")
	rb, _ := call(t, b, "parley_register", map[string]any{"name": "beta"})
	call(t, a, "parley_room_open", map[string]any{"name": "r", "members": []string{rb["address"].(string)}})
	out, _ := call(t, b, "parley_ask", map[string]any{"room": "r", "to": "alpha", "text": "the diff, please", "wait_seconds": 1})
	ask := out["ask_id"].(string)
	long := strings.Repeat("+ a line of the diff, at length\n", 60_000/32)
	if _, err := nt.Node(0).Inbox().Reply(ctx, "alpha", localapi.ReplyRequest{MessageID: ask, Text: long}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, structured, text := sizes(t, b, "parley_wait", map[string]any{"wait_seconds": 1})
		if structured+text > 100_000 {
			t.Fatalf("%d bytes of structured output and %d of text in one tool result, %d items", structured, text, len(out["pending"].([]any)))
		}
		for _, p := range out["pending"].([]any) {
			if p.(map[string]any)["kind"] == "reply" {
				return true
			}
		}
		return false
	}, "the reply among beta's pending items")
}
