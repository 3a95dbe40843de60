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

// TestWithParentMakesRoom: a membership's first event names its admitting
// event; with the parents full, it takes the place of the shallowest, and
// the parents stay sorted, unique and at most MaxParents.
func TestWithParentMakesRoom(t *testing.T) {
	r := &room{heads: map[ID]uint64{}}
	for d := uint64(1); d <= 30; d++ {
		var id ID
		id[0], id[1] = byte(31-d), 0xAA // IDs sort against depth
		r.heads[id] = d
	}
	parents, depth := r.pickParents()
	var admit ID
	admit[0] = 0xFF
	got := r.withParent(slices.Clone(parents), admit)
	if len(got) != MaxParents || !slices.Contains(got, admit) || !slices.IsSortedFunc(got, ID.Compare) {
		t.Fatalf("parents %v: %d, want %d sorted with the admitting event", got, len(got), MaxParents)
	}
	var dropped []ID
	for _, p := range parents {
		if !slices.Contains(got, p) {
			dropped = append(dropped, p)
		}
	}
	if len(dropped) != 1 || r.heads[dropped[0]] != 1 {
		t.Fatalf("dropped %v for the admitting event, want the shallowest head alone", dropped)
	}
	var top uint64
	for _, p := range got {
		top = max(top, r.heads[p])
	}
	if top+1 != depth {
		t.Fatalf("the deepest parent left is at %d; the event's depth %d no longer follows it", top, depth)
	}
	// Named already, or with room to spare: nothing else changes.
	if again := r.withParent(slices.Clone(got), admit); !slices.Equal(again, got) {
		t.Fatalf("naming it twice changed the parents: %v", again)
	}
	few := parents[:3]
	if out := r.withParent(slices.Clone(few), admit); len(out) != 4 || !slices.Contains(out, admit) {
		t.Fatalf("with room to spare: %v", out)
	}
	// Several named (an invite back names every leave, a first event its
	// invite): none of them makes room for another.
	var leave1, leave2 ID
	leave1[0], leave2[0] = 0xFE, 0xFD
	several := r.withParent(slices.Clone(parents), admit, leave1, leave2)
	if len(several) != MaxParents || !slices.Contains(several, admit) || !slices.Contains(several, leave1) || !slices.Contains(several, leave2) {
		t.Fatalf("parents %v: %d, want %d with the three named", several, len(several), MaxParents)
	}
}
