package board_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/rooms/board"
)

// TestAheadCheckCostIsBounded: a member dates n claims an hour ahead (its
// clock is wrong, or it does so on purpose), each by another agent name
// and on 64 paths of its own, 16 of them globs with a common prefix. Held
// back, they cost the fold nothing until they are due. Before, every
// check of a claim of this node's agents (Service.conflict, under the
// board's lock) read them all from the store again and checked each
// one's paths against every path of every one before it: 20 of them made
// a one-path claim take about a second, at every claim, at every wake-up
// of a claim that waits and at every read of notices with a refused claim
// watched. Now the check reads only the first MaxAheadChecked of them,
// stopping once their claims reach MaxPaths paths, finds overlaps through the index the fold uses, and keeps what it found
// until the board or the entries held back change. The test counts the
// entries read from the store, not time.
func TestAheadCheckCostIsBounded(t *testing.T) {
	n := board.MaxAheadChecked + 8
	var offset atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nt, room := skewedNode(ctx, t, &offset)
	offset.Store(int64(time.Hour))
	long := strings.Repeat("x", 40)
	for k := range n {
		var paths []string
		for j := range 16 {
			paths = append(paths, fmt.Sprintf("g/*%s-%d-%d", long, k, j))
		}
		for j := range 48 {
			paths = append(paths, fmt.Sprintf("p/%d/%d.go", k, j))
		}
		postClaim(ctx, t, nt, room, fmt.Sprintf("m%d", k), time.Hour, paths...)
	}
	offset.Store(0)
	svc := nt.Node(0).Board()
	nt.WaitFor(30*time.Second, func() bool {
		svc.Board(ctx, project) //nolint:errcheck
		k, _ := board.HeldAhead(svc, project)
		return k == n
	}, "the board to hold back the %d claims", n)

	reads := board.AheadReads(svc)
	start := time.Now()
	if _, err := claim(ctx, nt, 0, "carol", "docs", time.Hour, 0, "docs/x.md"); err != nil {
		t.Fatal(err)
	}
	t.Logf("carol's claim: %v", time.Since(start))
	if got := board.AheadReads(svc) - reads; got > board.MaxAheadChecked {
		t.Fatalf("carol's claim read %d entries held back, want at most %d", got, board.MaxAheadChecked)
	}

	// Dave's claim over m0's, the first held back, is refused; erin's over
	// another path of m0's too, and with nothing new since dave's, the check reads nothing.
	var ce *board.ConflictError
	if _, err := claim(ctx, nt, 0, "dave", "p0", time.Hour, 0, "p/0/0.go"); !errors.As(err, &ce) || ce.Ahead <= 0 {
		t.Fatalf("dave's claim over m0's held back: %v, want refused as dated ahead", err)
	}
	reads = board.AheadReads(svc)
	if _, err := claim(ctx, nt, 0, "erin", "p0", time.Hour, 0, "p/0/1.go"); !errors.As(err, &ce) || ce.Ahead <= 0 {
		t.Fatalf("erin's claim over m0's held back: %v, want refused as dated ahead", err)
	}
	if got := board.AheadReads(svc) - reads; got != 0 {
		t.Fatalf("erin's claim, with nothing new since dave's, read %d entries held back, want none", got)
	}
}
