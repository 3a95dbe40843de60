package mcp_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// anyCut is the marker that ends a text cut for a tool result, whatever
// call it gives: the count of characters left out and the call's
// arguments.
var anyCut = regexp.MustCompile(`\n… \[cut: ([0-9,]+) more characters; parley_read (\{[^}]*\}) ([a-z ]+)\]`)

// An ask longer than a parley_read page (ReadPage) reaches the agent cut;
// the marker's call, made as it says, gives the text from the first
// character left out, and the pages' next calls after it give the rest:
// the start shown and the parts read on make the ask whole, each part
// once. Before, the marker said parley_read {"message_id":ID} "shows it
// whole", but that call gives only the text's first page, from its start
// again.
func TestCutAskMarkerReadsOnFromWhereItCut(t *testing.T) {
	nt, a, b, _ := twoAgents(t)
	beta := "beta@" + nt.ID(1).String()
	long := "review this diff\n" + longDiff(40_000)
	id, shown := askReviewPending(t, a, b, beta, long)
	m := anyCut.FindStringSubmatchIndex(shown)
	if m == nil {
		t.Fatalf("the ask's text has no marker of its cut:\n%s", shown[max(0, len(shown)-600):])
	}
	left, _ := strconv.Atoi(strings.ReplaceAll(shown[m[2]:m[3]], ",", ""))
	var args map[string]any
	if err := json.Unmarshal([]byte(shown[m[4]:m[5]]), &args); err != nil {
		t.Fatalf("the marker's call %s: %v", shown[m[4]:m[5]], err)
	}
	if says := shown[m[6]:m[7]]; says != "reads on" {
		t.Fatalf("the marker says %q of its call %s, want \"reads on\"", says, shown[m[4]:m[5]])
	}
	// The start shown: the ask's lines, indented, before the marker.
	start := strings.Index(shown, "  review this diff")
	var lines []string
	for _, l := range strings.Split(shown[start:m[0]], "\n") {
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	head := strings.Join(lines, "\n")
	r := []rune(long)
	if left <= 0 || left >= len(r) || strings.TrimRight(string(r[:len(r)-left]), "\n") != head {
		t.Fatalf("the marker counts %d of %d characters left out, but %d are shown", left, len(r), len([]rune(head)))
	}
	// The marker's call, then each page's next.
	got := string(r[:len(r)-left])
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("the marker's call and next gave %d pages and go on", pages)
		}
		out, text := call(t, b, "parley_read", args)
		msgs := out["messages"].([]any)
		if len(msgs) != 1 || msgs[0].(map[string]any)["id"] != id {
			t.Fatalf("parley_read %v: %d messages:\n%.300s", args, len(msgs), text)
		}
		got += msgs[0].(map[string]any)["text"].(string)
		next, _ := out["next_offset"].(float64)
		if next == 0 {
			break
		}
		args = map[string]any{"message_id": id, "offset": int(next)}
	}
	if got != long {
		t.Fatalf("the start shown and the parts read on from the marker's call are %d characters, not the ask's %d (a part given twice or left out)",
			len([]rune(got)), len(r))
	}
}
