package board_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestBoardForgetsNoticesOfEndedClaims: the notices a board hands out
// (claim_expiring, claim_lost) are remembered so that each is told once,
// but only while the claim each is about lives: once it has expired no
// such notice can be told again, and the service lets go of it. Before,
// the service remembered every notice it had handed out for as long as
// the node ran, one or more for every claim its agents made.
func TestBoardForgetsNoticesOfEndedClaims(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var ahead time.Duration
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(ahead) }
	set := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); ahead = d }
	s, err := board.New(board.Config{Rooms: nt.Node(0).Rooms(), Self: nt.ID(0), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "alice", board.ClaimRequest{Project: project, Paths: []string{"a.go"}, Note: "n", TTL: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	set(15 * time.Second) // within half its TTL of the claim's end
	if ns := s.Notices("alice", true); len(ns) != 1 || ns[0].Kind != board.NoticeExpiring {
		t.Fatalf("notices near the claim's end: %+v", ns)
	}
	if ns := s.Notices("alice", true); len(ns) != 0 || board.Told(s) != 1 {
		t.Fatalf("told again: %+v (%d remembered)", ns, board.Told(s))
	}
	set(time.Minute) // the claim has expired
	if ns := s.Notices("alice", true); len(ns) != 0 {
		t.Fatalf("notices after the claim's end: %+v", ns)
	}
	if got := board.Told(s); got != 0 {
		t.Fatalf("%d notices remembered of a claim that has expired", got)
	}
}
