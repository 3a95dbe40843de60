package board_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestClaimOnAFolderNotYetMadeCoversItsFiles: alice is about to make the
// package pkg/new and claims it as `parley claim pkg/new` or parley_claim
// {"paths":["pkg/new"]} (the folder does not exist yet, so it stays
// "pkg/new", not "pkg/new/**"). In git a path is a file or a folder, never
// both: a file under pkg/new/ is inside what alice claimed. The board's
// history already counted claims under a glob-free path as on it
// (State.History). Before, the conflict check did not, and bob's claim on
// a file in her folder went through, either way round, as did his commit
// past the git guard; now a path with no glob overlaps a pattern that
// names something inside it (Overlap in pattern.go).
func TestClaimOnAFolderNotYetMadeCoversItsFiles(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct{ first, second string }{
		{"pkg/new", "pkg/new/a.go"},
		{"cmd/tool/main.go", "cmd/tool"},
	} {
		if _, err := claim(ctx, nt, 0, "alice", "new package", time.Hour, 0, c.first); err != nil {
			t.Fatal(err)
		}
		_, err := claim(ctx, nt, 0, "bob", "helpers", time.Hour, 0, c.second)
		var ce *board.ConflictError
		if !errors.As(err, &ce) {
			t.Errorf("alice holds %s; bob's claim on %s: %v, want refused", c.first, c.second, err)
		}
		// What the git guard asks (node/board.go): the claims that overlap
		// a file the commit changes.
		if c.first == "pkg/new" && !board.Overlap(c.first, c.second) {
			t.Errorf("a commit adding %s is not checked against alice's claim on %s", c.second, c.first)
		}
		for _, a := range []string{"alice", "bob"} {
			if _, err := nt.Node(0).Board().Release(ctx, agentName(a), project, nil); err != nil && !errors.Is(err, board.ErrNotHeld) {
				t.Fatal(err)
			}
		}
	}
}
