package inbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/parley-mesh/parley/internal/inbox"
)

// TestReviewCallsForUnknownAgentsAreKeptForGood: a call of the local API
// for an agent name no agent holds (a peek, a take, a wait: a typo, a
// script that loops over names, an agent that renames itself each run)
// leaves that name's state in the inbox's memory for good: it is never
// dropped, unregistered or not.
func TestReviewCallsForUnknownAgentsAreKeptForGood(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	const n = 5000
	for i := range n {
		if _, err := ib(nt, 0).Peek(ctx, fmt.Sprintf("nobody-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := inbox.States(ib(nt, 0)); got >= n {
		t.Fatalf("after peeks for %d names no agent holds, the inbox keeps %d agents' states in memory", n, got)
	}
}
