package inbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// TestWaitingCountsWhatATakeLeavesForLater: a take lists invitations
// within PendingBudget, and the node's status counted the human's
// invitations (and asks) from such a list: 30 invitations into rooms of
// long purposes read as the few one take gives. Waiting counts them all.
func TestWaitingCountsWhatATakeLeavesForLater(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	members := []string{"beta"}
	for i := range 20 {
		members = append(members, register(t, nt, 0, fmt.Sprintf("m%02d-%s", i, strings.Repeat("x", 50))))
	}
	const n = 30
	for i := range n {
		if _, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: fmt.Sprintf("r%02d", i),
			Purpose: strings.Repeat("a purpose; ", 27), Members: members}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "r00", To: "beta", Text: "owed"}); err != nil {
		t.Fatal(err)
	}
	p, err := ib(nt, 0).Peek(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, it := range p.Items {
		if it.Kind == "invitation" {
			listed++
		}
	}
	if listed >= n {
		t.Fatalf("a peek lists %d invitations of %d; want fewer, within the budget", listed, n)
	}
	asks, invitations, err := ib(nt, 0).Waiting(ctx, "beta")
	if err != nil || asks != 1 || invitations != n {
		t.Fatalf("Waiting: %d asks, %d invitations, %v; want 1 and %d", asks, invitations, err, n)
	}
}
