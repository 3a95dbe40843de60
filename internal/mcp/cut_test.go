package mcp_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/parley-mesh/parley/node/nodetest"
)

// askReviewPending sends beta (the agent of session b) an ask of text,
// which begins "review this diff", from session a, and returns the ask's
// ID and text as b's parley_register lists it pending.
func askReviewPending(t *testing.T, a, b *sdk.ClientSession, beta, text string) (id, shown string) {
	t.Helper()
	if _, out, isErr := try(t, a, "parley_ask", map[string]any{"to": beta, "text": text, "wait_seconds": 1}); isErr {
		t.Fatalf("ask: %s", out)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _ := call(t, b, "parley_register", nil)
		for _, p := range out["pending"].([]any) {
			it := p.(map[string]any)
			if it["kind"] == "ask" && strings.Contains(it["text"].(string), "review this diff") {
				id, shown = it["id"].(string), it["text"].(string)
			}
		}
		return id != ""
	}, "the long ask to reach beta")
	return id, shown
}

// An ask too long for an agent's notice reaches it cut, with the marker
// that says how many characters were left out and the call that reads on
// (TestCutAskMarkerReadsOnFromWhereItCut follows it); parley_read with
// message_id (whole, or its first 8 characters) shows all of an ask within
// a page. An agent not in the ask's room is refused it, and an
// unknown ID is a clear error.
func TestLongAskCutShowsHowToReadItWhole(t *testing.T) {
	nt, a, b, _ := twoAgents(t)
	beta := "beta@" + nt.ID(1).String()
	var d strings.Builder
	for i := 0; d.Len() < 5000; i++ {
		fmt.Fprintf(&d, "+ line %04d of the diff to review\n", i)
	}
	long := "review this diff\n" + d.String()
	long = long[:5000]
	id, shown := askReviewPending(t, a, b, beta, long)
	m := regexp.MustCompile(`\n… \[cut: ([0-9,]+) more characters; parley_read \{"message_id":"([^"]+)","offset":[0-9]+\} reads on\]`).FindStringSubmatch(shown)
	if m == nil {
		t.Fatalf("the ask's text does not say it is cut, nor how to read it whole:\n%s", shown[max(0, len(shown)-600):])
	}
	if m[2] != id {
		t.Fatalf("the marker names %s, want the ask %s", m[2], id)
	}
	// The text shown is the ask's start, indented; the marker counts the
	// rest.
	start := strings.Index(shown, "  review this diff")
	end := strings.Index(shown, m[0])
	var lines []string
	for _, l := range strings.Split(shown[start:end], "\n") {
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	got := strings.Join(lines, "\n")
	var left int
	fmt.Sscan(strings.ReplaceAll(m[1], ",", ""), &left)
	if want := strings.TrimRight(long[:len(long)-left], "\n"); got != want {
		t.Fatalf("the marker counts %s left out, but %d of %d characters are shown", m[1], len(got), len(long))
	}
	for _, ref := range []string{id, id[:8]} {
		out, text := call(t, b, "parley_read", map[string]any{"message_id": ref})
		msgs := out["messages"].([]any)
		if len(msgs) != 1 || msgs[0].(map[string]any)["text"] != long || msgs[0].(map[string]any)["id"] != id {
			t.Fatalf("parley_read by %s: %d messages, text:\n%.300s", ref, len(msgs), text)
		}
		if !strings.Contains(text, "+ line 0130 of the diff to review") {
			t.Fatalf("parley_read by %s: the text result lacks the ask's end:\n%.300s", ref, text)
		}
	}
	// Another agent of beta's node, not in the room: to it the event is as
	// one that does not exist, nothing of the text given, nor the whole ID
	// for its first 8 characters.
	c := connect(t, nt, 1, "c")
	call(t, c, "parley_register", map[string]any{"name": "gamma"})
	for _, ref := range []string{id, id[:8]} {
		out, text, isErr := try(t, c, "parley_read", map[string]any{"message_id": ref})
		if !isErr || !strings.Contains(text, "no event") || strings.Contains(text, "line 0001") || strings.Contains(fmt.Sprint(out), "line 0001") ||
			ref != id && strings.Contains(text, id) {
			t.Fatalf("gamma, not in the room, read by %s: error=%v %q", ref, isErr, text)
		}
	}
	if _, text, isErr := try(t, b, "parley_read", map[string]any{"message_id": "aaaaaaaa"}); !isErr || !strings.Contains(text, "begins with aaaaaaaa") {
		t.Fatalf("an unknown ID: error=%v %q", isErr, text)
	}
	if _, text, isErr := try(t, b, "parley_read", map[string]any{"message_id": id, "last": 3}); !isErr || !strings.Contains(text, "without room") {
		t.Fatalf("message_id with last: error=%v %q", isErr, text)
	}
}
