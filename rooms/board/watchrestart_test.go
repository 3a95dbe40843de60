package board_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// refusedOnNode1 starts two befriended nodes sharing a board, registers
// bob on node 1, has alice on node 0 claim shared/x.go and bob on node 1
// be refused it.
func refusedOnNode1(t *testing.T) (*nodetest.Net, context.Context) {
	t.Helper()
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	if _, err := nt.Node(1).Agents().Register(ctx, agents.RegisterRequest{Name: "bob", TTLSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	if _, err := claim(ctx, nt, 0, "alice", "alice's work", time.Hour, 0, "shared/x.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "node 1 to see alice's claim")
	if _, err := claim(ctx, nt, 1, "bob", "bob's fix", time.Hour, 0, "shared/x.go"); !errors.Is(err, board.ErrConflict) {
		t.Fatalf("bob's claim: %v, want a conflict", err)
	}
	return nt, ctx
}

// freeTold takes bob's pending items on node i and counts the claim_free
// notices on shared/x.go among them.
func freeTold(ctx context.Context, t *testing.T, nt *nodetest.Net, i int) int {
	t.Helper()
	p, err := nt.Node(i).Inbox().Take(ctx, "bob")
	if err != nil {
		t.Fatalf("bob's take on node %d: %v", i, err)
	}
	return countFree(p)
}

func countFree(p localapi.Pending) int {
	n := 0
	for _, it := range p.Items {
		if it.Kind == board.NoticeFree && slices.Contains(it.Paths, "shared/x.go") {
			n++
		}
	}
	return n
}

// TestBoardRefusedClaimWatchedAcrossARestart: bob was refused shared/x.go
// because alice holds it; bob's node restarts; alice releases: bob is
// told, in his pending items, that shared/x.go is free, once. Before, the
// watch lived only in the board's memory, and the restart lost it: bob
// was never told.
func TestBoardRefusedClaimWatchedAcrossARestart(t *testing.T) {
	nt, ctx := refusedOnNode1(t)
	nt.Crash(1)
	nt.Restart(1)
	nt.WaitConnected(0, 1)
	if _, err := nt.Node(0).Board().Release(ctx, agentName("alice"), project, []string{"shared/x.go"}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 0 }, "node 1 to see alice's release")
	told := 0
	nt.WaitFor(30*time.Second, func() bool { told += freeTold(ctx, t, nt, 1); return told > 0 }, "bob to be told shared/x.go is free")
	if told != 1 || freeTold(ctx, t, nt, 1) != 0 {
		t.Fatalf("bob told %d times that shared/x.go is free", told+freeTold(ctx, t, nt, 1))
	}
}

// TestBoardRefusedClaimFreedWhileTheNodeWasDown: alice releases while
// bob's node is down. Once it is up again and has the release, bob is told
// shared/x.go is free, once: not again after a second restart.
func TestBoardRefusedClaimFreedWhileTheNodeWasDown(t *testing.T) {
	nt, ctx := refusedOnNode1(t)
	nt.Crash(1)
	if _, err := nt.Node(0).Board().Release(ctx, agentName("alice"), project, []string{"shared/x.go"}); err != nil {
		t.Fatal(err)
	}
	nt.Restart(1)
	told := 0
	nt.WaitFor(60*time.Second, func() bool { told += freeTold(ctx, t, nt, 1); return told > 0 }, "bob to be told shared/x.go is free")
	if told != 1 {
		t.Fatalf("bob told %d times that shared/x.go is free", told)
	}
	nt.Crash(1)
	nt.Restart(1)
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 0 }, "node 1 to fold its board")
	if n := freeTold(ctx, t, nt, 1); n != 0 {
		t.Fatalf("bob told again after another restart (%d)", n)
	}
	if w := board.Watches(nt.Node(1).Board()); w != 0 {
		t.Fatalf("%d watches left after the notice was told", w)
	}
}
