package mcp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/node/nodetest"
)

// owedAsk polls the agent's pending items until an ask of text shows, and
// returns its ID and room.
func owedAsk(t *testing.T, cs *sdk.ClientSession, text string) (id, room string) {
	t.Helper()
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _ := call(t, cs, "parley_register", nil)
		for _, p := range out["pending"].([]any) {
			it := p.(map[string]any)
			if (it["kind"] == "ask" || it["kind"] == "reminder") && strings.Contains(it["text"].(string), text) {
				id, room = it["id"].(string), it["room"].(string)
			}
		}
		return id != ""
	}, "the ask %q to reach its agent", text)
	return id, room
}

// count counts the messages and pending items of tool results that show
// text.
func count(text string, outs ...map[string]any) int {
	n := 0
	for _, out := range outs {
		for _, k := range []string{"messages", "pending"} {
			list, _ := out[k].([]any)
			for _, m := range list {
				if m.(map[string]any)["text"] == text {
					n++
				}
			}
		}
	}
	return n
}

// The reply parley_ask returned is not shown again by parley_read; a
// message said in the room before it is shown once, with the ask's pending
// items or by the read.
func TestAskReplyShownOnce(t *testing.T) {
	nt, a, b, _ := twoAgents(t)
	beta := "beta@" + nt.ID(1).String()
	for k := range 2 {
		q, answer, aside := fmt.Sprintf("question %d?", k), fmt.Sprintf("answer %d", k), fmt.Sprintf("aside %d", k)
		done := make(chan map[string]any, 1)
		go func() {
			out, text, isErr := try(t, a, "parley_ask", map[string]any{"to": beta, "text": q, "wait_seconds": 40})
			if isErr {
				t.Errorf("ask %d: %s", k, text)
			}
			done <- out
		}()
		id, room := owedAsk(t, b, q)
		if k == 1 {
			call(t, b, "parley_say", map[string]any{"room": room, "text": aside})
		}
		call(t, b, "parley_reply", map[string]any{"message_id": id, "text": answer})
		ask := <-done
		if r, _ := ask["reply"].(map[string]any); r == nil || r["text"] != answer {
			t.Fatalf("ask %d returned %v, want the reply %q", k, ask, answer)
		}
		read, text := call(t, a, "parley_read", map[string]any{})
		if n := count(answer, ask, read); n != 0 {
			t.Fatalf("the reply parley_ask returned is shown %d more times: parley_read said %s", n, text)
		}
		if k == 1 {
			if n := count(aside, ask, read); n != 1 {
				t.Fatalf("the message before the reply is shown %d times, want once: parley_read said %s", n, text)
			}
		}
	}
}
