package board

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestFoldGoesBackAndMeets: entries that arrive late, in any number
// between two reads, with checkpoints close together and thinned often,
// fold to what a fold of the same entries in time order gives: the live
// claims at any time, the history, every record and every conflict.
func TestFoldGoesBackAndMeets(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	holders := []string{"a@p", "b@p", "c@q", "d@q"}
	paths := []string{"a/**", "a/*.go", "a/b.go", "c.go", "d/**", "d/e/f.go", "**"}
	var refolds, folds int
	for round := range 300 {
		n := 20 + rng.IntN(150)
		es := make([]Entry, n)
		for i := range es {
			at := int64(rng.IntN(60_000))
			h := holders[rng.IntN(len(holders))]
			id := fmt.Sprintf("r%de%03d", round, i)
			switch rng.IntN(6) {
			case 0:
				var ps []string
				if rng.IntN(2) == 0 {
					ps = []string{paths[rng.IntN(len(paths))]}
				}
				es[i] = release(t, id, h, at, ps...)
			case 1:
				es[i] = Entry{ID: id, Room: "r", Holder: h, Time: at, Kind: KindClaim, Body: []byte{0xff}} // malformed
			default:
				ps := []string{paths[rng.IntN(len(paths))]}
				if rng.IntN(3) == 0 {
					ps = append(ps, paths[rng.IntN(len(paths))])
					slices.Sort(ps)
					ps = slices.Compact(ps)
				}
				es[i] = claim(t, id, h, at, time.Duration(1+rng.IntN(20))*time.Second, "n", ps...)
			}
		}
		// Arrival: mostly in time order, some late by a little or a lot.
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		key := func(i int) int64 {
			k := es[i].Time
			if rng.IntN(4) == 0 {
				k += int64(rng.IntN(30_000))
			}
			return k
		}
		keys := make([]int64, n)
		for i := range keys {
			keys[i] = key(i)
		}
		slices.SortFunc(order, func(a, b int) int { return int(keys[a] - keys[b]) })

		s := NewState()
		s.every, s.maxCps = 1+rng.IntN(4), 2+rng.IntN(5)
		for _, i := range order {
			s.Add(es[i])
			s.check(t)
			if rng.IntN(3) > 0 {
				s.Live(time.UnixMilli(70_000))
				s.check(t)
				if len(s.ahead) > 0 {
					t.Fatalf("round %d: folded to the end with states ahead: %v", round, s.ahead)
				}
			}
		}
		want := NewState()
		sorted := slices.Clone(es)
		slices.SortFunc(sorted, func(a, b Entry) int {
			if a.before(&b) {
				return -1
			}
			return 1
		})
		for _, e := range sorted {
			want.Add(e)
		}
		for _, ms := range []int64{0, 5_000, 20_000, 40_000, 59_999, 70_000} {
			at := time.UnixMilli(ms)
			if got, w := s.Live(at), want.Live(at); !reflect.DeepEqual(got, w) {
				t.Fatalf("round %d: live at %d ms: %v, want %v", round, ms, got, w)
			}
			for _, p := range paths {
				if got, w := s.Conflict("a@p", []string{p}, at), want.Conflict("a@p", []string{p}, at); !reflect.DeepEqual(got, w) {
					t.Fatalf("round %d: conflict on %s at %d ms: %+v, want %+v", round, p, ms, got, w)
				}
			}
		}
		if got, w := s.History(""), want.History(""); !reflect.DeepEqual(got, w) {
			t.Fatalf("round %d: history differs:\n%+v\nwant\n%+v", round, got, w)
		}
		for _, e := range es {
			got, _ := s.Record(e.ID)
			w, _ := want.Record(e.ID)
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("round %d: record %s: %+v, want %+v", round, e.ID, got, w)
			}
		}
		refolds += s.refolds
		folds += n
	}
	t.Logf("%d entries folded again for %d taken in", refolds, folds)
}

// TestLateClaimFoldsOnlyWhileItHolds: on a board of 3,000 claims, one a
// second, each held for a minute, a claim dated back (by 100 s, or to the
// board's first second) folds again only the entries from the checkpoint
// before it until its own minute is over, not the board.
func TestLateClaimFoldsOnlyWhileItHolds(t *testing.T) {
	s := NewState()
	for i := range 3000 {
		s.Add(claim(t, fmt.Sprintf("e%05d", i), fmt.Sprintf("agent%d@p", i%10), int64(i)*1000, time.Minute,
			"work", fmt.Sprintf("pkg%d/file%d.go", i%37, i)))
	}
	now := time.UnixMilli(3000 * 1000)
	s.Live(now)
	for k, at := range []int64{2900 * 1000, 500, 1_500_000} {
		before := s.refolds
		s.Add(claim(t, fmt.Sprintf("late%d", k), "late@q", at, time.Minute, "late", fmt.Sprintf("late/%d.go", k)))
		s.Live(now)
		// From the checkpoint before it (at most cpEvery entries back) to the
		// end of its minute (60 entries), and the next checkpoint.
		if got := s.refolds - before; got > 2*cpEvery+60 || got == 0 {
			t.Fatalf("a claim dated %d ms folded %d entries again", at, got)
		}
		if r, _ := s.Record(fmt.Sprintf("late%d", k)); r.Lost != nil || r.Bad != "" {
			t.Fatalf("late claim: %+v", r)
		}
	}
	// A claim dated back that loses changes nothing: the fold meets the one
	// before at the first state it had past the claim.
	before := s.refolds
	s.Add(claim(t, "loser", "late@q", 1_000_500, time.Hour, "late", "pkg1/**"))
	s.Live(now)
	if got := s.refolds - before; got > cpEvery+1 {
		t.Fatalf("a claim dated back that lost folded %d entries again", got)
	}
	if r, _ := s.Record("loser"); r.Lost == nil {
		t.Fatalf("late claim on a held path: %+v", r)
	}
	// What it changed is what a fold from the start gives.
	want := NewState()
	for _, e := range s.entries {
		want.Add(*e)
	}
	if !reflect.DeepEqual(s.History(""), want.History("")) {
		t.Fatal("history differs from a fold from the start")
	}
}

// check fails t unless every entry folded has its record, the states
// ahead are in order and past the fold, and the checkpoints are in order,
// at most maxCps, and not past it.
func (s *State) check(t *testing.T) {
	t.Helper()
	for i, e := range s.entries[:s.applied] {
		if _, ok := s.records[e.ID]; !ok {
			t.Fatalf("entry %d (%s) of %d folded without a record", i, e.ID, len(s.entries))
		}
	}
	for j := range s.ahead {
		if s.ahead[j].n <= s.applied || j > 0 && s.ahead[j].n <= s.ahead[j-1].n {
			t.Fatalf("states ahead %v, folded to %d", s.ahead, s.applied)
		}
	}
	for j := range s.cps {
		if s.cps[j].n > s.applied || j > 0 && s.cps[j].n <= s.cps[j-1].n {
			t.Fatalf("checkpoints %v, folded to %d", s.cps, s.applied)
		}
	}
	if len(s.cps) > s.maxCps || len(s.ahead) > s.maxCps {
		t.Fatalf("%d checkpoints and %d states ahead, at most %d", len(s.cps), len(s.ahead), s.maxCps)
	}
}
