package board_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestBoardRefusedClaimsKeptBounded: every refused claim is remembered
// for an hour (watchTTL) to tell its agent when its paths go free, one
// per set of paths, with its paths (up to 64 of 512 bytes) and note, and
// is let go only when that agent reads its notices. A refusal posts
// nothing and counts against no post limit, so an agent that is refused
// claims on ever new sets of paths under a claim of another's (x/**), or
// whose session is gone before it reads its notices, leaves the node one
// watch each, and each read of notices checks every one of them against
// the board under the board's lock. What the node keeps of refusals must
// be bounded. Before, every one was kept for its hour; now an agent's
// watches are capped at 32 and the service's at 4096 (the oldest
// dropped), and expired ones are dropped at every refused claim.
func TestBoardRefusedClaimsKeptBounded(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "alice's work", time.Hour, 0, "x/**"); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		_, err := claim(ctx, nt, 0, "bob", "bob's work", time.Hour, 0, fmt.Sprintf("x/f%d.go", i))
		if !errors.Is(err, board.ErrConflict) {
			t.Fatalf("claim %d: %v, want a conflict", i, err)
		}
	}
	if w := board.Watches(nt.Node(0).Board()); w > 100 {
		t.Fatalf("after %d refused claims of one agent the board keeps %d of them to watch", n, w)
	}
}
