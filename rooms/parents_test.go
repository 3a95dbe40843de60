package rooms

import (
	"slices"
	"testing"
)

// TestParentsMergeShallowHeads: with more heads than fit in one event, an
// own event takes the deepest (its depth follows the deepest) and the
// shallowest few, so heads left far behind are merged in time.
func TestParentsMergeShallowHeads(t *testing.T) {
	r := &room{heads: map[ID]uint64{}}
	byDepth := map[uint64]ID{}
	for d := uint64(1); d <= 30; d++ {
		var id ID
		id[0], id[1] = byte(d), 0xAA
		r.heads[id] = d
		byDepth[d] = id
	}
	parents, depth := r.pickParents()
	if depth != 31 || len(parents) != MaxParents {
		t.Fatalf("%d parents at depth %d, want %d at 31", len(parents), depth, MaxParents)
	}
	for d := uint64(30); d > 30-(MaxParents-mergeShallow); d-- {
		if !slices.Contains(parents, byDepth[d]) {
			t.Fatalf("the head at depth %d is not a parent", d)
		}
	}
	for d := uint64(1); d <= mergeShallow; d++ {
		if !slices.Contains(parents, byDepth[d]) {
			t.Fatalf("the shallow head at depth %d is not a parent", d)
		}
	}
	if !slices.IsSortedFunc(parents, func(a, b ID) int { return a.Compare(b) }) {
		t.Fatal("parents not sorted")
	}
	// Few heads: all of them.
	r.heads = map[ID]uint64{byDepth[1]: 1, byDepth[5]: 5}
	if parents, depth := r.pickParents(); len(parents) != 2 || depth != 6 {
		t.Fatalf("two heads gave %d parents at depth %d", len(parents), depth)
	}
}
