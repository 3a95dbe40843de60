package board_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/rooms/board"
)

// TestBoardPartitionTellsTheWinnerToo: alice and bob claim the same file
// on two sides of a partition, and both hear "claimed". At the heal every
// node folds the same winner, and the loser is told it lost; the winner
// must be told too, once, that another agent claimed the file apart from
// it (and may have changed it meanwhile): a conflict shown to both sides,
// not a winner left to find out at merge time. Before (found by a hostile
// review, 2026-12-07), the winner's agent was told nothing, and its board
// showed only its own claim.
func TestBoardPartitionTellsTheWinnerToo(t *testing.T) {
	nt, ctx, ra, rb := claimsApart(t, "shared/x.go", "shared/x.go")
	nt.WaitFor(60*time.Second, func() bool {
		for i := range 2 {
			h, err := nt.Node(i).Board().History(ctx, project, "shared/x.go")
			if err != nil || len(h) != 2 || h[0].Lost == nil && h[1].Lost == nil {
				return false
			}
		}
		return true
	}, "both nodes to fold both claims")
	wi, wa, la, loser := 0, "alice", "bob", rb.Event
	if h, _ := nt.Node(0).Board().History(ctx, project, "shared/x.go"); h[0].ID == rb.Event {
		wi, wa, la, loser = 1, "bob", "alice", ra.Event
	}
	var told []board.Notice
	for _, n := range nt.Node(wi).Board().Notices(agentName(wa), true) {
		if n.Kind == board.NoticeContested {
			told = append(told, n)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0].ID, loser) || told[0].Held == nil || !strings.HasPrefix(told[0].Held.Holder, la+"@") ||
		!strings.Contains(told[0].Text, la+"@") || !strings.Contains(told[0].Text, "shared/x.go") {
		t.Fatalf("%s (the winner) was told %+v, want one %s naming %s's claim on shared/x.go", wa, told, board.NoticeContested, la)
	}
	for _, n := range nt.Node(wi).Board().Notices(agentName(wa), true) {
		if n.Kind == board.NoticeContested {
			t.Fatalf("told twice: %+v", n)
		}
	}
}

// TestBoardLoserIsToldWhenThePathsGoFree: bob's claim, made apart, lost
// to alice's at the heal, and bob was told "It is not yours: agree with
// them, or wait". When alice releases, bob is told the paths are free, as
// an agent refused a claim is. Before (found by a hostile review,
// 2026-12-07), nothing watched a claim that lost: bob, told to wait, was
// never told there was no more to wait for.
func TestBoardLoserIsToldWhenThePathsGoFree(t *testing.T) {
	nt, ctx, _, _ := claimsApart(t, "shared/x.go", "shared/x.go")
	var lost bool
	nt.WaitFor(60*time.Second, func() bool {
		for _, n := range nt.Node(1).Board().Notices(agentName("bob"), true) {
			lost = lost || n.Kind == board.NoticeLost
		}
		return lost
	}, "bob to be told his claim lost")
	if _, err := nt.Node(0).Board().Release(ctx, agentName("alice"), project, []string{"shared/x.go"}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		for _, n := range nt.Node(1).Board().Notices(agentName("bob"), true) {
			if n.Kind == board.NoticeFree && strings.Contains(n.Text, "shared/x.go") {
				return true
			}
		}
		return false
	}, "bob to be told shared/x.go is free")
}
