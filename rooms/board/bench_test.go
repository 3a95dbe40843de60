package board_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// BenchmarkClaimVisible measures how long a claim made on one node takes
// to show on another node's board (p50 and p99 over b.N claims).
//
//	go test -run '^$' -bench ClaimVisible -benchtime 200x ./rooms/board
func BenchmarkClaimVisible(b *testing.B) {
	nt := nodetest.Start(b, 2)
	nt.Befriend(b, 0, 1)
	ctx := context.Background()
	if _, err := nt.Node(0).Board().Claim(ctx, "alice", board.ClaimRequest{Project: project, Paths: []string{"warm"}, Note: "warm up", TTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(nil, nt, 1)) == 1 }, "node 1 to see the board")
	changes, stop := nt.Node(1).Rooms().Changes()
	defer stop()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		path := fmt.Sprintf("f/%d.go", i)
		start := time.Now()
		if _, err := nt.Node(0).Board().Claim(ctx, "alice", board.ClaimRequest{Project: project, Paths: []string{path}, Note: "bench", TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
		deadline := time.After(30 * time.Second)
		for !slices.ContainsFunc(live(nil, nt, 1), func(h board.Held) bool { return h.Path == path }) {
			select {
			case <-changes:
			case <-deadline:
				b.Fatalf("claim %d not seen on node 1", i)
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// board1000 starts a node whose board holds 1,000 live claims of 10 agents.
func board1000(b *testing.B) *nodetest.Net {
	nt := nodetest.Start(b, 1)
	ctx := context.Background()
	for i := range 1000 {
		agent := fmt.Sprintf("agent%d", i%10)
		path := fmt.Sprintf("pkg%d/file%d.go", i%37, i)
		if _, err := nt.Node(0).Board().Claim(ctx, agentName(agent), board.ClaimRequest{Project: project, Paths: []string{path}, Note: "work", TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	return nt
}

// BenchmarkBoardRead1000: reading a board of 1,000 live claims.
//
//	go test -run '^$' -bench BoardRead1000 ./rooms/board
func BenchmarkBoardRead1000(b *testing.B) {
	nt := board1000(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		v, err := nt.Node(0).Board().Board(ctx, project)
		if err != nil || len(v.Claims) != 1000 {
			b.Fatalf("%d claims, %v", len(v.Claims), err)
		}
	}
}

// BenchmarkConflictDecision: a claim refused because it overlaps one of
// 1,000 live claims (the check a claim makes before it is posted).
//
//	go test -run '^$' -bench ConflictDecision ./rooms/board
func BenchmarkConflictDecision(b *testing.B) {
	nt := board1000(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		_, err := nt.Node(0).Board().Claim(ctx, "other", board.ClaimRequest{Project: project, Paths: []string{"pkg5/*.go"}, Note: "n", TTL: time.Hour})
		if !errors.Is(err, board.ErrConflict) {
			b.Fatal(err)
		}
	}
}
