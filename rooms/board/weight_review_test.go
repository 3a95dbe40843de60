package board

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNodeWeightFoldsAlikeWithTrimsAndRestarts: node p posts claims and
// releases as large as allowed over 30 h (the NodeWindow slides: some are
// ignored for p's weight, some not), node q small claims over the same
// paths (whether q's win depends on which of p's are ignored), and a few
// membership entries. They arrive mostly in time order, some late, a few
// dated far back; the long-running fold is trimmed after reads (keep
// shorter and longer than NodeWindow), made again from all entries taken
// when stale, as the service does. At the end it, and a fold made from
// the entries in arrival order and trimmed once (a restart), answer as a
// fold of every entry in time order: live claims and the records kept.
func TestNodeWeightFoldsAlikeWithTrimsAndRestarts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	note := strings.Repeat("n", MaxNote)
	hour := time.Hour.Milliseconds()
	var stale, trimmed, overs int
	for round := range 2 {
		keep := []time.Duration{2 * time.Hour, MaxTTL + MaxAhead + time.Hour}[round%2]
		var es []Entry
		n := 600
		for i := range n {
			at := int64(i)*(18*hour/int64(n)) + int64(rng.IntN(int(hour/10)))
			id := fmt.Sprintf("r%de%03d", round, i)
			pre := fmt.Sprintf("p%d", rng.IntN(6))
			switch k := rng.IntN(16); {
			case k == 0:
				es = append(es, m(id, KindRemoved, "r", "q", at))
			case k == 1:
				es = append(es, m(id, KindInvited, "r", "q", at))
			case k < 4:
				es = append(es, release(t, id, fmt.Sprintf("a%d@p", rng.IntN(2)), at, bigPaths(pre)...))
			case k < 6:
				es = append(es, release(t, id, fmt.Sprintf("a%d@p", rng.IntN(2)), at))
			case k < 10:
				es = append(es, claim(t, id, "b@q", at, time.Duration(1+rng.IntN(3))*time.Hour, "q", pre+"/**"))
			default:
				es = append(es, claim(t, id, fmt.Sprintf("a%d@p", rng.IntN(2)), at, time.Duration(1+rng.IntN(8))*time.Hour, note, bigPaths(pre)...))
			}
		}
		es = append(es, m(fmt.Sprintf("r%dc", round), KindCreated, "r", "p", 0))
		// Arrival: mostly in time order, some late by up to 20 min, a few
		// by up to 12 h.
		keys := make([]int64, len(es))
		for i := range keys {
			keys[i] = es[i].Time
			switch rng.IntN(30) {
			case 0:
				keys[i] += int64(rng.IntN(int(12 * hour)))
			case 1, 2, 3:
				keys[i] += int64(rng.IntN(int(hour / 3)))
			}
		}
		arrival := make([]int, len(es))
		for i := range arrival {
			arrival[i] = i
		}
		slices.SortFunc(arrival, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })

		fresh := func(taken []Entry) *State {
			s := NewState()
			s.every, s.maxCps = 2+rng.IntN(6), 8+rng.IntN(8)
			for _, e := range taken {
				s.Add(e)
			}
			return s
		}
		s := fresh(nil)
		var taken []Entry
		for _, i := range arrival {
			s.Add(es[i])
			taken = append(taken, es[i])
			if s.Stale() {
				stale++
				s = fresh(taken)
			}
			if rng.IntN(3) == 0 {
				s.Live(time.UnixMilli(es[i].Time))
				continue
			}
			s.Trim(keep)
			if s.Trimmed() {
				trimmed++
			}
		}
		restarted := fresh(taken)
		restarted.Trim(keep)

		sorted := slices.Clone(es)
		slices.SortFunc(sorted, func(a, b Entry) int { return order(&a, &b) })
		want := NewState()
		for _, e := range sorted {
			want.Add(e)
		}
		wantH := want.History("")
		for _, r := range wantH {
			if r.Bad == overWeight[KindClaim] {
				overs++
			}
		}
		byID := map[string]Record{}
		for _, r := range wantH {
			byID[r.ID] = r
		}
		end := sorted[len(sorted)-1].Time
		for _, at := range []int64{end - 3*hour, end - hour, end} {
			wl := want.Live(time.UnixMilli(at))
			for name, got := range map[string]*State{"long-running": s, "restarted": restarted} {
				if l := got.Live(time.UnixMilli(at)); !reflect.DeepEqual(l, wl) {
					t.Fatalf("round %d, %s fold: %d live claims at %d, want %d", round, name, len(l), at, len(wl))
				}
			}
		}
		for name, got := range map[string]*State{"long-running": s, "restarted": restarted} {
			for _, r := range got.History("") {
				if !reflect.DeepEqual(r, byID[r.ID]) {
					t.Fatalf("round %d, %s fold: record %+v, want %+v", round, name, r, byID[r.ID])
				}
			}
		}
	}
	if stale == 0 || trimmed == 0 || overs == 0 {
		t.Fatalf("%d folds made again, %d trimmed reads, %d ignored for weight: the test did not test", stale, trimmed, overs)
	}
	t.Logf("%d folds made again, %d trimmed reads, %d records ignored for weight", stale, trimmed, overs)
}

// TestReleaseStaysPossibleOverTheNodesWeight: agent a0 of node p holds a
// small claim for 8 h; another agent of p (a runaway, or a flood) then
// fills p's weight with large claims. a0's release of its claim an hour
// later ends it: releases count against a limit of their own
// (MaxNodeReleaseWeight), apart from claims. Before, the release was
// ignored for p's weight, and a0's claim held its path against every
// other agent until it expired, 7 h on (and the service refused the
// release before posting it).
func TestReleaseStaysPossibleOverTheNodesWeight(t *testing.T) {
	hour := time.Hour.Milliseconds()
	s := NewState()
	s.Add(claim(t, "c0", "a0@p", 0, MaxTTL, "mine", "src/main.go"))
	note := strings.Repeat("n", MaxNote)
	for i := range 100 {
		s.Add(claim(t, fmt.Sprintf("f%03d", i), "runaway@p", 1000+int64(i), MaxTTL, note, bigPaths(fmt.Sprintf("f%d", i))...))
	}
	s.Add(release(t, "rel", "a0@p", hour)) // everything of a0's: no paths
	if r, _ := s.Record("rel"); r.Bad != "" {
		t.Errorf("a0's release of everything: ignored (%s)", r.Bad)
	}
	if h := s.Conflict("b@q", []string{"src/main.go"}, time.UnixMilli(2*hour)); h != nil {
		t.Errorf("an hour after its release, a0's claim still holds src/main.go until %v", time.UnixMilli(h.Expires).UTC())
	}
}

// TestCheckpointsOfANodesHeldClaimsAreBounded: node p holds as many paths
// as its MaxNodeWeight lets it (claims of 64 short paths, 8 h), then posts
// small claims past its weight, each ignored (they keep only their IDs).
// Each checkpoint of the fold lists every held claim, p's too: the
// checkpoints alone should keep no more than about MaxNodeWeight for p's
// claims. Before a fix they keep several times it (8 bytes a held path in
// each of up to cpMax checkpoints), which Weight does not count.
func TestCheckpointsOfANodesHeldClaimsAreBounded(t *testing.T) {
	t.Skip("known gap (docs/ARCHITECTURE.md, Known gaps): checkpoints copy the held claims (8 bytes a path each, up to cpMax of them), so a node within its MaxNodeWeight has the fold keep up to ~30 MiB for it")
	s := NewState()
	at := int64(0)
	for i := 0; ; i++ {
		ps := make([]string, MaxPaths)
		for j := range ps {
			ps[j] = fmt.Sprintf("%d/%d", i, j)
		}
		slices.Sort(ps)
		at++
		s.Add(claim(t, fmt.Sprintf("c%05d", i), "a@p", at, MaxTTL, "n", ps...))
		if r, _ := s.Record(fmt.Sprintf("c%05d", i)); r.Bad != "" {
			break
		}
	}
	for i := range 20000 {
		at++
		s.Add(claim(t, fmt.Sprintf("f%05d", i), "a@p", at, time.Minute, "n", "x"))
	}
	s.Live(time.UnixMilli(at))
	seen := map[uintptr]bool{}
	held := retainedOnce(reflect.ValueOf(s.held), seen) + retainedOnce(reflect.ValueOf(&s.idx), seen)
	cps := retainedOnce(reflect.ValueOf(s.cps), seen) + retainedOnce(reflect.ValueOf(s.ahead), seen)
	t.Logf("%d held paths of p: held and index %d KiB, %d checkpoints %d KiB (MaxNodeWeight %d KiB)", len(s.held), held>>10, len(s.cps), cps>>10, MaxNodeWeight>>10)
	if cps > MaxNodeWeight {
		t.Errorf("the checkpoints keep %d KiB for one node's claims within its weight, more than MaxNodeWeight (%d KiB)", cps>>10, MaxNodeWeight>>10)
	}
}

// TestNodeWeightFoldsAlikeAtEqualTimesAndWindowEdges: node p's large
// claims and releases are dated at a few times only, some exactly
// NodeWindow apart or a millisecond within it, so that many share a time
// (ordered by ID) and the window's edges decide; node q's small claims
// overlap them. Taken in in random orders with reads between, the board
// folds as the entries in time order do.
func TestNodeWeightFoldsAlikeAtEqualTimesAndWindowEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	note := strings.Repeat("n", MaxNote)
	w := NodeWindow.Milliseconds()
	times := []int64{1000, 1000 + w - 1, 1000 + w, 1000 + w + 1, 1000 + 2*w}
	var es []Entry
	for i := range 260 {
		at := times[rng.IntN(len(times))]
		id := fmt.Sprintf("e%03x", rng.IntN(1<<12)) + fmt.Sprint(i)
		pre := fmt.Sprintf("p%d", rng.IntN(5))
		switch k := rng.IntN(10); {
		case k == 0:
			es = append(es, release(t, id, "a@p", at, bigPaths(pre)...))
		case k < 3:
			es = append(es, claim(t, id, "b@q", at, MaxTTL, "q", pre+"/**"))
		default:
			es = append(es, claim(t, id, fmt.Sprintf("a%d@p", rng.IntN(2)), at, MaxTTL, note, bigPaths(pre)...))
		}
	}
	sorted := slices.Clone(es)
	slices.SortFunc(sorted, func(a, b Entry) int { return order(&a, &b) })
	want := NewState()
	for _, e := range sorted {
		want.Add(e)
	}
	wantH := want.History("")
	overs := 0
	for _, r := range wantH {
		if r.Bad == overWeight[KindClaim] {
			overs++
		}
	}
	if overs == 0 || overs == len(wantH) {
		t.Fatalf("%d of %d ignored for weight: the test did not test", overs, len(wantH))
	}
	for round := range 4 {
		got := NewState()
		got.every, got.maxCps = 1+rng.IntN(6), 4+rng.IntN(8)
		for _, k := range rng.Perm(len(es)) {
			got.Add(es[k])
			if rng.IntN(6) == 0 {
				got.Live(time.UnixMilli(times[len(times)-1]))
			}
		}
		if h := got.History(""); !reflect.DeepEqual(h, wantH) {
			for i := range h {
				if !reflect.DeepEqual(h[i], wantH[i]) {
					t.Fatalf("round %d: record %d: %+v, want %+v", round, i, h[i], wantH[i])
				}
			}
			t.Fatalf("round %d: histories differ", round)
		}
		for _, at := range times {
			if l, wl := got.Live(time.UnixMilli(at)), want.Live(time.UnixMilli(at)); !reflect.DeepEqual(l, wl) {
				t.Fatalf("round %d: %d live claims at %d, want %d", round, len(l), at, len(wl))
			}
		}
	}
	t.Logf("%d of %d ignored for weight", overs, len(wantH))
}
