package board_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestOtherAgentReleasesWhileItsNodeIsAtItsWeight: alice claims x.go for
// 8 h; a runaway agent of the same node then claims as large as allowed
// until the node's weight is reached (large claims, then renewals of a
// one-letter path). alice can still release x.go: releases count against
// a limit of their own. Before, the release was refused with
// ErrNodeWeight, and x.go stayed alice's until it expired.
func TestOtherAgentReleasesWhileItsNodeIsAtItsWeight(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "mine", board.MaxTTL, 0, "x.go"); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		c, err := board.DecodeClaim(bigClaim(t, i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := claim(ctx, nt, 0, "runaway", c.Note, c.TTL, 0, c.Paths...); errors.Is(err, board.ErrNodeWeight) {
			break
		} else if err != nil || i > 1000 {
			t.Fatalf("claim %d: %v", i, err)
		}
	}
	// Then the same one-letter path again and again (each a renewal):
	// what is left of the node's weight is less than one of those.
	for i := 0; ; i++ {
		if _, err := claim(ctx, nt, 0, "runaway", "w", time.Minute, 0, "y"); errors.Is(err, board.ErrNodeWeight) {
			break
		} else if err != nil || i > 1000 {
			t.Fatalf("renewal %d: %v", i, err)
		}
	}
	if _, err := nt.Node(0).Board().Release(ctx, "alice", project, []string{"x.go"}); err != nil {
		t.Errorf("alice's release of x.go, her node at its weight: %v", err)
	}
	if hs := holders(live(t, nt, 0)); hs["x.go"] != "" {
		t.Errorf("after alice's release, x.go is still held by %s", hs["x.go"])
	}
}
