package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestMCPBoardHistoryShowsIgnoredClaims: a member whose clock is a year
// ahead (or who dates its claim so on purpose) claims main.go. The board
// holds the claim back, and the CLI's history says "(ignored: …)"; the
// agent's history (parley_board with history) must say so too, not list
// it as a claim like any other. Before (found by a hostile review,
// 2026-12-07), the tool left out why an event was ignored: the agent read
// "mallory claim main.go — mine for a year" as a claim that held.
func TestMCPBoardHistoryShowsIgnoredClaims(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithClockAhead(1, 365*24*time.Hour))
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	const key = "mcp-board-bad-test"
	call(t, a, "parley_claim", map[string]any{"paths": []string{"setup.go"}, "note": "setup", "project": key})
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		v, err := nt.Node(1).Board().Board(ctx, key)
		return err == nil && len(v.Rooms) == 1 && len(v.Claims) == 1
	}, "node 1 to be in the board")
	if _, err := nt.Node(1).Board().Claim(ctx, identity.AgentName("mallory"), board.ClaimRequest{Project: key, Paths: []string{"main.go"},
		Note: "mine for a year", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	var text string
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, text = call(t, a, "parley_board", map[string]any{"project": key, "history": true})
		return strings.Contains(text, "mine for a year")
	}, "alpha's history to list mallory's claim")
	var ev map[string]any
	for _, e := range out["history"].([]any) {
		if m := e.(map[string]any); m["note"] == "mine for a year" {
			ev = m
		}
	}
	if ev == nil || ev["bad"] == nil || !strings.Contains(text, "ignored") {
		t.Fatalf("mallory's claim dated a year ahead, in alpha's history: %v\n%s", ev, text)
	}
}
