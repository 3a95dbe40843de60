package mcp_test

import (
	"strings"
	"testing"

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
	out, _ = call(t, b, "parley_board", map[string]any{"project": key})
	if cs := out["claims"].([]any); len(cs) != 1 || cs[0].(map[string]any)["note"] != "new endpoint" {
		t.Fatalf("board: %v", out)
	}
	call(t, a, "parley_release", map[string]any{"project": key})
	call(t, b, "parley_claim", map[string]any{"paths": []string{"api/user.go"}, "note": "fix", "project": key})
	out, _ = call(t, b, "parley_board", map[string]any{"project": key, "history": true, "path": "api/user.go"})
	if h := out["history"].([]any); len(h) != 3 {
		t.Fatalf("history: %v", out)
	}
}
