package mcp_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node/nodetest"
)

// resultBound is the most a tool result may be, its structured output and
// text together: Claude Code refuses one over 25,000 tokens, about 100 KB.
const resultBound = 100_000

// restCall is the marker of a text cut with the call that reads on
// (manual.CutRest).
var restCall = regexp.MustCompile(`\n… \[cut: ([0-9,]+) more characters; parley_read \{"message_id":"([^"]+)","offset":([0-9]+)\} reads on\]$`)

// longDiff is a reply of about n bytes, its lines numbered so that a part
// left out or given twice shows.
func longDiff(n int) string {
	var d strings.Builder
	for i := 0; d.Len() < n; i++ {
		fmt.Fprintf(&d, "+ line %05d of the diff, at length — ünïcödé too\n", i)
	}
	return d.String()
}

// readWhole reads event id by parley_read pages, from offset 0 on, each
// result within resultBound, and returns the parts put together.
func readWhole(t *testing.T, cs *sdk.ClientSession, id string) (string, int) {
	t.Helper()
	var whole strings.Builder
	offset, pages := 0, 0
	for {
		pages++
		if pages > 50 {
			t.Fatalf("parley_read of %s gave %d pages and goes on", id, pages)
		}
		out, text, structured, textLen := sizes(t, cs, "parley_read", map[string]any{"message_id": id, "offset": offset})
		if structured+textLen > resultBound {
			t.Fatalf("parley_read at offset %d: %d bytes structured and %d of text", offset, structured, textLen)
		}
		msgs := out["messages"].([]any)
		if len(msgs) != 1 {
			t.Fatalf("parley_read at offset %d: %d messages", offset, len(msgs))
		}
		part := msgs[0].(map[string]any)["text"].(string)
		if part == "" {
			t.Fatalf("parley_read at offset %d gave an empty part", offset)
		}
		whole.WriteString(part)
		if got, _ := out["offset"].(float64); int(got) != offset {
			t.Fatalf("parley_read says the part starts at %v, asked %d", got, offset)
		}
		next, ok := out["next_offset"].(float64)
		if !ok {
			if out["next"] != nil || strings.Contains(text, "reads on]") {
				t.Fatalf("the last part still names a next call: %v\n%s", out["next"], text[max(0, len(text)-300):])
			}
			return whole.String(), pages
		}
		want := fmt.Sprintf(`parley_read {"message_id":%q,"offset":%d}`, id, int(next))
		if out["next"] != want || !strings.Contains(text, fmt.Sprintf(`parley_read {"message_id":%q,"offset":%d} reads on]`, id, int(next))) {
			t.Fatalf("a part ends without the call for the next: next %v, want %s\n%s", out["next"], want, text[max(0, len(text)-300):])
		}
		offset = int(next)
	}
}

// TestLongReplyComesInASmallResult: a reply to an agent's ask was given
// whole, in the text and again in the structured output, whether
// parley_ask or parley_wait returned it or it came among the pending
// items (a take's first item is given whatever its size). A reply of
// 60,000 bytes (a diff pasted as the answer; texts go to 64 KiB) made one
// tool result of some 120 KB, past what a client takes (Claude Code
// refuses a result over 25,000 tokens, about 100 KB), and the result,
// written, confirmed its hand-out: the reply was gone for the agent. Now
// a reply is cut at mcp.ReplyBudget, as an owed ask is, its text ending
// with the marker that counts what was left out and gives the parley_read
// call that reads on, and parley_read by ID gives the rest a page at a time.
func TestLongReplyComesInASmallResult(t *testing.T) {
	nt, a := handNet(t, 0)
	ctx := context.Background()
	b := connect(t, nt, 0, "b")
	rb, _ := call(t, b, "parley_register", map[string]any{"name": "beta"})
	call(t, a, "parley_room_open", map[string]any{"name": "r", "members": []string{rb["address"].(string)}})
	out, _ := call(t, b, "parley_ask", map[string]any{"room": "r", "to": "alpha", "text": "the diff, please", "wait_seconds": 1})
	ask := out["ask_id"].(string)
	long := longDiff(60_000)
	if _, err := nt.Node(0).Inbox().Reply(ctx, "alpha", localapi.ReplyRequest{MessageID: ask, Text: long}); err != nil {
		t.Fatal(err)
	}
	var reply map[string]any
	var text string
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, txt, structured, textLen := sizes(t, b, "parley_wait", map[string]any{"wait_seconds": 1})
		if structured+textLen > resultBound {
			t.Fatalf("%d bytes of structured output and %d of text in one tool result, %d items", structured, textLen, len(out["pending"].([]any)))
		}
		for _, p := range out["pending"].([]any) {
			if p.(map[string]any)["kind"] == "reply" {
				reply, text = p.(map[string]any), txt
				return true
			}
		}
		return false
	}, "the reply among beta's pending items")
	shown := reply["text"].(string)
	m := restCall.FindStringSubmatch(shown)
	if m == nil {
		t.Fatalf("the reply's text does not end with the marker of its cut:\n%s", shown[max(0, len(shown)-300):])
	}
	id := reply["id"].(string)
	left, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	offset, _ := strconv.Atoi(m[3])
	head := strings.TrimSuffix(shown, m[0])
	total := len([]rune(long))
	if m[2] != id || !strings.HasPrefix(long, head) || len([]rune(head)) != offset || offset+left != total ||
		int(reply["text_left_out"].(float64)) != left {
		t.Fatalf("the marker names %s at offset %d with %d left out (text_left_out %v), the reply %s has %d characters, %d shown",
			m[2], offset, left, reply["text_left_out"], id, total, len([]rune(head)))
	}
	if !strings.Contains(text, m[0]) || strings.Contains(text, "    "+strings.TrimPrefix(m[0], "\n")) {
		t.Fatalf("the result's text lacks the marker on a line of Parley's own:\n%s", text[max(0, len(text)-400):])
	}
	// The reply whole by pages, and the part at the marker's offset.
	rest, _ := readWhole(t, b, id)
	if rest != long {
		t.Fatalf("parley_read pages put together give %d characters, want the reply's %d", len([]rune(rest)), total)
	}
	out, _, structured, textLen := sizes(t, b, "parley_read", map[string]any{"message_id": id, "offset": offset})
	if part := out["messages"].([]any)[0].(map[string]any)["text"].(string); !strings.HasPrefix(long[len(head):], part) || structured+textLen > resultBound {
		t.Fatalf("parley_read at the marker's offset does not go on where the cut did (%d+%d bytes)", structured, textLen)
	}
}

// TestAgentReadsA60KBReplyInFull: an agent asks, and the answer of
// 60,000 bytes comes back to parley_ask, and again to parley_wait with the
// ask's ID, each within what a client takes, cut with the marker; the
// agent follows the calls parley_read gives (next) and reads the reply
// whole, a page a result, with the go-sdk MCP client.
func TestAgentReadsA60KBReplyInFull(t *testing.T) {
	nt, a, b, room := twoAgents(t)
	long := longDiff(60_000)
	alpha := "alpha@" + nt.ID(0).String()
	// alpha answers each ask to it with the long diff.
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			p, err := nt.Node(0).Inbox().Take(context.Background(), "alpha")
			if err != nil {
				continue
			}
			for _, it := range p.Items {
				if it.Kind == "ask" {
					_, _ = nt.Node(0).Inbox().Reply(context.Background(), "alpha", localapi.ReplyRequest{MessageID: it.ID, Text: long})
				}
			}
		}
	}()
	_ = a
	out, text, structured, textLen := sizes(t, b, "parley_ask", map[string]any{"room": room, "to": alpha, "text": "the diff, please", "wait_seconds": 30})
	if structured+textLen > resultBound {
		t.Fatalf("parley_ask: %d bytes structured, %d of text", structured, textLen)
	}
	r, _ := out["reply"].(map[string]any)
	if r == nil {
		t.Fatalf("parley_ask gave no reply:\n%.500s", text)
	}
	check := func(call string, r map[string]any, text string) string {
		t.Helper()
		shown := r["text"].(string)
		m := restCall.FindStringSubmatch(shown)
		if m == nil || m[2] != r["id"] || !strings.HasPrefix(long, strings.TrimSuffix(shown, m[0])) || !strings.Contains(text, m[0]) ||
			int(r["text_left_out"].(float64)) == 0 {
			t.Fatalf("%s: the reply is not cut with the marker that reads on:\n%s", call, shown[max(0, len(shown)-300):])
		}
		return r["id"].(string)
	}
	id := check("parley_ask", r, text)
	out, text, structured, textLen = sizes(t, b, "parley_wait", map[string]any{"ask_id": out["ask_id"], "wait_seconds": 1})
	if structured+textLen > resultBound || out["reply"] == nil {
		t.Fatalf("parley_wait with ask_id: %d bytes structured, %d of text, reply %v", structured, textLen, out["reply"] != nil)
	}
	check("parley_wait", out["reply"].(map[string]any), text)
	got, pages := readWhole(t, b, id)
	if got != long {
		t.Fatalf("the pages put together give %d characters, want %d", len([]rune(got)), len([]rune(long)))
	}
	if pages < 2 {
		t.Fatalf("a reply of %d bytes read in %d page", len(long), pages)
	}
	// An offset past the text, or without message_id, is refused in words.
	if _, text, isErr := try(t, b, "parley_read", map[string]any{"message_id": id, "offset": len(long) * 2}); !isErr || !strings.Contains(text, "past the end") {
		t.Fatalf("an offset past the end: %s", text)
	}
	if _, text, isErr := try(t, b, "parley_read", map[string]any{"room": room, "offset": 10}); !isErr || !strings.Contains(text, "message_id") {
		t.Fatalf("an offset without message_id: %s", text)
	}
	_ = mcp.ReadPage
}
