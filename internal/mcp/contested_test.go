package mcp_test

import (
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPPartitionTellsBothAgentsOfTheConflict: alpha and beta, on two
// nodes apart, claim the same file through parley_claim, and both hear
// "Claimed". Once the nodes meet, the agent whose claim lost is told so,
// and the agent whose claim holds is told, in its pending items, that the
// other one claimed the file apart from it and may have changed it. Before
// (found by a hostile review, 2026-12-07), the winner was told nothing.
func TestMCPPartitionTellsBothAgentsOfTheConflict(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	a, b := connect(t, nt, 0, "a"), connect(t, nt, 1, "b")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	call(t, b, "parley_register", map[string]any{"name": "beta"})
	const key = "mcp-contested-test"
	call(t, a, "parley_claim", map[string]any{"paths": []string{"setup.go"}, "note": "setup", "project": key})
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _ := call(t, b, "parley_board", map[string]any{"project": key})
		return len(out["claims"].([]any)) == 1
	}, "beta to see the board")
	nt.Partition([]int{0}, []int{1})
	call(t, a, "parley_claim", map[string]any{"paths": []string{"shared/x.go"}, "note": "left side", "project": key})
	call(t, b, "parley_claim", map[string]any{"paths": []string{"shared/x.go"}, "note": "right side", "project": key})
	nt.Heal()
	var lost, contested string
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		for _, c := range []*sdk.ClientSession{a, b} {
			_, text := call(t, c, "parley_board", map[string]any{"project": key})
			if strings.Contains(text, "lost to") {
				lost = text
			}
			if strings.Contains(text, "also claimed shared/x.go") {
				contested = text
			}
		}
		return lost != "" && contested != ""
	}, "both agents to be told of the conflict")
	if !strings.Contains(contested, "parley_board {\"history\":true,\"path\":\"shared/x.go\"}") {
		t.Fatalf("the winner's notice has no call to read on:\n%s", contested)
	}
}
