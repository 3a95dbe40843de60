package board

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// bigPaths returns MaxPaths paths of MaxPattern bytes, under prefix.
func bigPaths(prefix string) []string {
	ps := make([]string, MaxPaths)
	for j := range ps {
		p := fmt.Sprintf("%s/%d/", prefix, j)
		ps[j] = p + strings.Repeat("x", MaxPattern-len(p))
	}
	slices.Sort(ps)
	return ps
}

// TestNodeWeightFoldsAlikeInAnyOrder: node p's agents post claims and
// releases as large as allowed, far more than MaxNodeWeight in NodeWindow,
// and node q a few small claims; taken in in any order, with reads
// between, the board folds to what the same entries taken in in time
// order give: which of p's are ignored for its weight (those after its
// first MaxNodeWeight in any NodeWindow, whatever their agent), the live
// claims and every record. q's claims are never ignored. An entry ignored
// keeps no body, and its record no paths.
func TestNodeWeightFoldsAlikeInAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	note := strings.Repeat("n", MaxNote)
	hour := time.Hour.Milliseconds()
	for round := range 2 {
		var es []Entry
		for i := range 130 {
			at := int64(rng.IntN(int(6 * hour)))
			id := fmt.Sprintf("r%dp%03d", round, i)
			h := fmt.Sprintf("a%d@p", rng.IntN(3))
			if rng.IntN(8) == 0 {
				r := release(t, id, h, at, bigPaths(fmt.Sprintf("p%d", rng.IntN(200)))...)
				es = append(es, r)
				continue
			}
			es = append(es, claim(t, id, h, at, time.Duration(1+rng.IntN(8))*time.Hour, note, bigPaths(fmt.Sprintf("p%d", i))...))
		}
		for i := range 20 {
			es = append(es, claim(t, fmt.Sprintf("r%dq%03d", round, i), "b@q", int64(rng.IntN(int(6*hour))), time.Hour, "q", fmt.Sprintf("q/%d.go", i)))
		}
		sorted := slices.Clone(es)
		slices.SortFunc(sorted, func(a, b Entry) int { return order(&a, &b) })
		want := NewState()
		for _, e := range sorted {
			want.Add(e)
		}
		wantH, wantLive := want.History(""), want.Live(time.UnixMilli(6*hour))
		over := 0
		for _, r := range wantH {
			if r.Bad == overWeight[KindClaim] {
				over++
				if !strings.HasSuffix(r.Holder, "@p") || r.Paths != nil || r.Note != "" {
					t.Fatalf("an ignored record: %+v", r)
				}
			}
		}
		if over == 0 || over == len(wantH)-20 || over < 20 {
			t.Fatalf("round %d: %d of %d entries ignored for their node's weight", round, over, len(wantH))
		}
		for _, e := range want.entries {
			if e.over && (len(e.claim.Paths) > 0 || len(e.release.Paths) > 0) {
				t.Fatalf("entry %s is ignored and keeps its body", e.ID)
			}
		}
		got := NewState()
		got.every, got.maxCps = 2+rng.IntN(8), 4+rng.IntN(8)
		for _, k := range rng.Perm(len(es)) {
			got.Add(es[k])
			if rng.IntN(8) == 0 {
				got.Live(time.UnixMilli(6 * hour))
			}
		}
		if got.Stale() {
			t.Fatal("stale without a trim")
		}
		if h := got.History(""); !reflect.DeepEqual(h, wantH) {
			for i := range h {
				if !reflect.DeepEqual(h[i], wantH[i]) {
					t.Fatalf("round %d: record %d: %+v, want %+v", round, i, h[i], wantH[i])
				}
			}
			t.Fatalf("round %d: histories differ", round)
		}
		if l := got.Live(time.UnixMilli(6 * hour)); !reflect.DeepEqual(l, wantLive) {
			t.Fatalf("round %d: %d live claims, want %d", round, len(l), len(wantLive))
		}
		t.Logf("round %d: %d of %d entries ignored for their node's weight; %d live paths", round, over, len(wantH), len(wantLive))
	}
}
