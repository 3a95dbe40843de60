package mcp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPBoard: two agent sessions on one node claim, conflict, release
// and read the board and its history through the tools.
func TestMCPBoard(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a, b := connect(t, nt, 0, "a"), connect(t, nt, 0, "b")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	call(t, b, "parley_register", map[string]any{"name": "beta"})
	const key = "mcp-board-test"

	out, _ := call(t, a, "parley_claim", map[string]any{"paths": []string{"api/*.go"}, "note": "new endpoint", "project": key, "ttl_minutes": 10})
	if held := out["held"].([]any); len(held) != 1 || held[0].(map[string]any)["path"] != "api/*.go" {
		t.Fatalf("claim: %v", out)
	}
	_, text, isErr := try(t, b, "parley_claim", map[string]any{"paths": []string{"api/user.go"}, "note": "fix", "project": key})
	if !isErr || !strings.Contains(text, "new endpoint") || !strings.Contains(text, "alpha@") {
		t.Fatalf("conflicting claim: %v %s", isErr, text)
	}
	for _, args := range []map[string]any{
		{"paths": []string{"x"}, "note": "", "project": key},
		{"paths": []string{"/etc/passwd"}, "note": "n", "project": key},
		{"paths": []string{"x"}, "note": "n", "project": key, "ttl_minutes": 1000},
	} {
		if _, text, isErr := try(t, b, "parley_claim", args); !isErr {
			t.Errorf("claim %v: accepted: %s", args, text)
		}
	}
	if _, text, isErr := try(t, b, "parley_release", map[string]any{"paths": []string{"api/*.go"}, "project": key}); !isErr {
		t.Fatalf("beta released alpha's claim: %s", text)
	}
	out, text = call(t, b, "parley_board", map[string]any{"project": key})
	if cs := out["claims"].([]any); len(cs) != 1 || cs[0].(map[string]any)["note"] != "new endpoint" {
		t.Fatalf("board: %v", out)
	}
	if alive := out["alive"].([]any); len(alive) != 2 || out["note"] != nil || !strings.Contains(text, "Alive in this project") {
		t.Fatalf("board's alive sessions: %v", out)
	}
	// Who shows alpha's claim beside what it works on.
	out, text = call(t, b, "parley_who", map[string]any{})
	found := false
	for _, ag := range out["agents"].([]any) {
		m := ag.(map[string]any)
		if strings.HasPrefix(m["address"].(string), "alpha@") {
			cs := m["claims"].([]any)
			found = len(cs) == 1 && strings.Contains(cs[0].(string), "api/*.go") && strings.Contains(cs[0].(string), "new endpoint")
		}
	}
	if !found || !strings.Contains(text, "claims: api/*.go") {
		t.Fatalf("who: %v\n%s", out, text)
	}
	call(t, a, "parley_release", map[string]any{"project": key})
	// Beta, refused before, is told the paths are free, in its pending items.
	_, text = call(t, b, "parley_board", map[string]any{"project": key})
	if !strings.Contains(text, "claim_free") && !strings.Contains(text, "is free now") {
		t.Fatalf("beta's pending after the release: %s", text)
	}
	call(t, b, "parley_claim", map[string]any{"paths": []string{"api/user.go"}, "note": "fix", "project": key})
	out, text = call(t, b, "parley_board", map[string]any{"project": key, "history": true, "path": "api/user.go"})
	if h := out["history"].([]any); len(h) != 3 {
		t.Fatalf("history: %v", out)
	}
	// Alpha's release of everything says so (it showed no path at all).
	if !strings.Contains(text, " release (all)") {
		t.Fatalf("history's text of a release of everything:\n%s", text)
	}
	// Alpha's session ends; its new claim stands, so the board is not
	// beta's alone and claims are no overhead.
	call(t, a, "parley_claim", map[string]any{"paths": []string{"docs/*.md"}, "note": "docs pass", "project": key})
	a.Close()
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _ = call(t, b, "parley_board", map[string]any{"project": key})
		return len(out["alive"].([]any)) == 1
	}, "alpha's session to end")
	if out["note"] != nil || len(out["claims"].([]any)) != 2 {
		t.Fatalf("a board with alpha's and beta's claims and one session alive: %v", out)
	}
}

// TestMCPBoardIsBounded: a board of more claims than parley_board lists
// gives the first ones by path and counts the rest; a path narrows it.
func TestMCPBoardIsBounded(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	const key = "mcp-board-bounded"
	for i := range 3 {
		paths := make([]string, 0, 64)
		for k := range 64 {
			paths = append(paths, fmt.Sprintf("d%d/f%02d.go", i, k))
		}
		call(t, a, "parley_claim", map[string]any{"paths": paths, "note": "many", "project": key})
	}
	out, text := call(t, a, "parley_board", map[string]any{"project": key})
	if cs := out["claims"].([]any); len(cs) != 100 || out["more"] != float64(92) || !strings.Contains(text, "192 claims on the board; the first 100") {
		t.Fatalf("a board of 192 claims: %d listed, more %v\n%.200s", len(cs), out["more"], text)
	}
	out, _ = call(t, a, "parley_board", map[string]any{"project": key, "path": "d2/f01.go"})
	if cs := out["claims"].([]any); len(cs) != 1 || out["more"] != nil {
		t.Fatalf("narrowed to one path: %v", out)
	}
	out, _ = call(t, a, "parley_board", map[string]any{"project": key, "history": true})
	if h := out["history"].([]any); len(h) != 3 || out["more"] != nil {
		t.Fatalf("history: %v", out)
	}
}

// A board of one claim says "1 claim", not "1 claims".
func TestMCPBoardCountsOneClaimInTheSingular(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	const key = "mcp-board-one"
	call(t, a, "parley_claim", map[string]any{"paths": []string{"a.go"}, "note": "n", "project": key})
	if _, text := call(t, a, "parley_board", map[string]any{"project": key}); !strings.HasPrefix(text, "1 claim on the board:") {
		t.Fatalf("board of one claim: %s", text)
	}
}
