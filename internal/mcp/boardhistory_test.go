package mcp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPBoardHistoryOfLongClaimsStaysSmall: parley_board's history lists
// the last 50 events, and an event may hold 64 paths of 512 bytes: a
// member of the board that posts 25 such claims and their releases (each
// within the limits) put 0.8 MB of paths into the answer's text, and as much again into its
// structured part, in every agent's context that read the history. The
// history now lists at most 8 paths of an event (counting the rest) and
// as many of the last events as fit 32 KiB of paths and notes; the rest
// are counted in more.
func TestMCPBoardHistoryOfLongClaimsStaysSmall(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	const key = "mcp-board-history-long"
	long := strings.Repeat("x", 480)
	for i := range 25 { // a claim and a release of it each
		paths := make([]string, 0, 64)
		for k := range 64 {
			paths = append(paths, fmt.Sprintf("d%02d/%s%02d.go", i, long, k))
		}
		call(t, a, "parley_claim", map[string]any{"paths": paths, "note": strings.Repeat("n", 400), "project": key})
		call(t, a, "parley_release", map[string]any{"project": key})
	}
	out, text := call(t, a, "parley_board", map[string]any{"project": key, "history": true})
	js, _ := json.Marshal(out)
	if n := len(text) + len(js); n > 200<<10 {
		t.Fatalf("the history of 50 claims of 64 long paths is %d KiB of text and %d KiB of structured output", len(text)>>10, len(js)>>10)
	}
	h := out["history"].([]any)
	if len(h) == 0 || out["more"] != float64(50-len(h)) || !strings.Contains(text, fmt.Sprintf("the last %d of 50 events", len(h))) {
		t.Fatalf("history: %d events listed, more %v\n%.300s", len(h), out["more"], text)
	}
	last := h[len(h)-2].(map[string]any) // the last claim, before its release
	if ps := last["paths"].([]any); len(ps) != 8 || last["more_paths"] != float64(56) || !strings.Contains(text, "and 56 more") {
		t.Fatalf("the last claim: %d paths listed, more_paths %v", len(ps), last["more_paths"])
	}
	if !strings.Contains(last["paths"].([]any)[0].(string), "d24/") {
		t.Fatalf("the last claim listed is not the last one made: %.40v", last["paths"])
	}
}
