package board_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestBoardPathsDifferingInCaseOnlyOverlap: on a file system that folds
// case (macOS's and Windows' defaults), README.md and readme.md are one
// file, and git there (core.ignorecase) keeps one of them. Two agents of
// one node claim it under the two spellings: the second claim must be
// refused as the first one's, not granted beside it, or both agents are
// told they hold the same file.
func TestBoardPathsDifferingInCaseOnlyOverlap(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "rewrite the intro", time.Hour, 0, "README.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := claim(ctx, nt, 0, "bob", "fix the typos", time.Hour, 0, "readme.md"); err == nil {
		t.Fatalf("bob's claim on readme.md granted beside alice's on README.md: the board now holds %v", holders(live(t, nt, 0)))
	}
}
