package board

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestTrimmedFoldAnswersAsTheWholeFold: the board's fold lets go of the
// entries dated more than keep before its last one (State.Trim), down to
// a checkpoint it starts from after, so that its memory is what refolding
// needs, not the board's whole history. Over random boards ten times as
// long as keep, trimmed after every read, entries late by up to 30 s, the
// live claims, the conflicts and the records of the entries it kept are
// those of a plain fold of every entry; an entry dated as far back as what
// was let go makes the State stale, and a State made again from all the
// entries (as the service does then) answers the same. Before, the fold
// kept every entry, body and all, for as long as the node ran.
func TestTrimmedFoldAnswersAsTheWholeFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	holders := []string{"a@p", "b@p", "c@q", "d@q"}
	paths := []string{"a/**", "a/*.go", "a/b.go", "c.go", "*.go", "d/**", "**"}
	const keep = 90 * time.Second
	var stale, trimmed int
	for round := range 20 {
		n := 200 + rng.IntN(300)
		es := make([]Entry, n)
		for i := range es {
			at := int64(i)*2000 + int64(rng.IntN(2000))
			h := holders[rng.IntN(len(holders))]
			id := fmt.Sprintf("r%de%03d", round, i)
			switch rng.IntN(8) {
			case 0, 1:
				var ps []string
				if rng.IntN(2) == 0 {
					ps = []string{paths[rng.IntN(len(paths))]}
				}
				es[i] = release(t, id, h, at, ps...)
			case 2:
				es[i] = Entry{ID: id, Room: "r", Holder: h, Time: at, Kind: KindClaim, Body: []byte{0xff}}
			default:
				ttl := time.Duration(1+rng.IntN(60)) * time.Second
				es[i] = claim(t, id, h, at, ttl, "n", paths[rng.IntN(len(paths))])
			}
		}
		// Arrival: mostly in time order, some late by up to 30 s, a few
		// dated far back (a claim made across a long partition).
		keys := make([]int64, n)
		for i := range keys {
			keys[i] = es[i].Time
			switch rng.IntN(40) {
			case 0:
				keys[i] += int64(rng.IntN(400_000))
			case 1, 2, 3, 4:
				keys[i] += int64(rng.IntN(30_000))
			}
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })

		s := NewState()
		s.every, s.maxCps = 1+rng.IntN(8), 16+rng.IntN(16)
		var taken []Entry
		for _, i := range order {
			s.Add(es[i])
			taken = append(taken, es[i])
			if s.Stale() {
				stale++
				s = NewState()
				s.every, s.maxCps = 1+rng.IntN(8), 16+rng.IntN(16)
				for _, e := range taken {
					s.Add(e)
				}
			}
			if rng.IntN(3) == 0 {
				continue
			}
			s.Trim(keep)
			s.check(t)
			if s.Trimmed() {
				trimmed++
			}
			if rng.IntN(10) == 0 || len(taken) == n {
				compareTrimmed(t, fmt.Sprintf("round %d after %d entries", round, len(taken)), s, taken, paths, rng)
			}
		}
		s.Trim(keep)
		if len(s.entries) >= len(taken)/2 {
			t.Fatalf("round %d: the fold keeps %d of %d entries over %d s", round, len(s.entries), len(taken), n*2)
		}
	}
	if stale == 0 || trimmed == 0 {
		t.Fatalf("%d folds made again, %d trimmed reads: the test did not test", stale, trimmed)
	}
	t.Logf("%d folds made again, %d trimmed reads", stale, trimmed)
}

// compareTrimmed fails t unless s, which may have let go of its first
// entries, answers as a plain fold of entries does about what it kept.
func compareTrimmed(t *testing.T, what string, s *State, entries []Entry, paths []string, rng *rand.Rand) {
	t.Helper()
	held, records, order := plainFold(t, entries)
	ms := slices.MaxFunc(entries, func(a, b Entry) int { return cmp.Compare(a.Time, b.Time) }).Time + int64(rng.IntN(30_000))
	var live []Held
	for _, h := range held {
		if h.Expires > ms {
			live = append(live, *h)
		}
	}
	slices.SortFunc(live, func(a, b Held) int { return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Holder, b.Holder)) })
	if got := s.Live(time.UnixMilli(ms)); len(got)+len(live) > 0 && !reflect.DeepEqual(got, live) {
		t.Fatalf("%s: live %v, want %v", what, holdersOf(got), holdersOf(live))
	}
	for _, p := range paths {
		var want *Held
		for _, h := range held {
			if h.Expires > ms && h.Holder != "a@p" && Overlap(p, h.Path) {
				cp := *h
				want = &cp
				break
			}
		}
		if got := s.Conflict("a@p", []string{p}, time.UnixMilli(ms)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: conflict on %s: %+v, want %+v", what, p, got, want)
		}
	}
	h := s.History("")
	if len(h) == 0 || len(h) > len(order) {
		t.Fatalf("%s: %d records of %d", what, len(h), len(order))
	}
	var want []Record
	for _, id := range order[len(order)-len(h):] {
		want = append(want, records[id])
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("%s: history\n%+v\nwant the last %d of\n%+v", what, h, len(h), want)
	}
}
