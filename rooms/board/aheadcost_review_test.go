package board_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/rooms/board"
)

// TestAheadCheckCostIsQuadraticPerClaim: a member dates n claims an hour
// ahead (its clock is wrong, or it does so on purpose), each by another
// agent name and on 64 paths of its own, 16 of them globs with a common
// prefix. Held back, they cost the fold nothing until they are due. But
// every claim of this node's agents now folds them all again
// (Service.conflict, under the board's lock): it reads each from the
// store, and checks each claim's paths against every path of every one
// before it, so n claims of 64 paths cost n²·64²/2 overlaps, at every
// claim, at every wake-up of a claim that waits (every event stored in
// any room) and at every read of notices with a refused claim watched.
// Carol's one-path claim, with 20 such claims held back, should take
// about as long as a read of the board.
func TestAheadCheckCostIsQuadraticPerClaim(t *testing.T) {
	const n = 20
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
	nt.WaitFor(30*time.Second, func() bool {
		nt.Node(0).Board().Board(ctx, project) //nolint:errcheck
		k, _ := board.HeldAhead(nt.Node(0).Board(), project)
		return k == n
	}, "the board to hold back the %d claims", n)

	start := time.Now()
	if _, err := nt.Node(0).Board().Board(ctx, project); err != nil {
		t.Fatal(err)
	}
	read := time.Since(start)
	start = time.Now()
	if _, err := claim(ctx, nt, 0, "carol", "docs", time.Hour, 0, "docs/x.md"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("a read of the board: %v; carol's claim: %v", read, took)
	if took > 500*time.Millisecond {
		t.Fatalf("carol's one-path claim took %v with %d claims held back as dated ahead (a read of the board: %v)", took, n, read)
	}
}
