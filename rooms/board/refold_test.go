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

// TestFoldGoesBackAndMeets: entries that arrive late, in any number
// between two reads, with checkpoints close together and thinned often,
// fold to what a plain fold of the same entries in time order gives (a
// fold from the start that decodes each body as it goes, as the board did
// before checkpoints): the live claims, the conflicts, the history and
// every record, at every read.
func TestFoldGoesBackAndMeets(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	holders := []string{"a@p", "b@p", "c@q", "d@q"}
	paths := []string{"a/**", "a/*.go", "a/b.go", "a/?.go", "c.go", "*.go", "d/**", "d/e/f.go", "**"}
	var refolds, folds int
	for round := range 200 {
		n := 20 + rng.IntN(150)
		es := make([]Entry, n)
		for i := range es {
			at := int64(rng.IntN(90_000) - 30_000) // the store refuses times before 1970; State takes them
			h := holders[rng.IntN(len(holders))]
			id := fmt.Sprintf("r%de%03d", round, i)
			switch rng.IntN(10) {
			case 0, 1:
				var ps []string
				if rng.IntN(2) == 0 {
					ps = []string{paths[rng.IntN(len(paths))]}
				}
				es[i] = release(t, id, h, at, ps...)
			case 2:
				es[i] = Entry{ID: id, Room: "r", Holder: h, Time: at, Kind: KindClaim, Body: []byte{0xff}}
			case 3:
				es[i] = Entry{ID: id, Room: "r", Holder: h, Time: at, Kind: KindRelease, Body: []byte{0xa1, 0x01}}
			case 4:
				es[i] = Entry{ID: id, Room: "r", Holder: h, Time: at, Kind: "message", Body: []byte("hi")}
			default:
				ps := []string{paths[rng.IntN(len(paths))]}
				if rng.IntN(3) == 0 {
					ps = append(ps, paths[rng.IntN(len(paths))])
					slices.Sort(ps)
					ps = slices.Compact(ps)
				}
				ttl := time.Duration(1+rng.IntN(20)) * time.Second
				if rng.IntN(4) == 0 {
					ttl = time.Duration(1+rng.IntN(60)) * time.Minute // past the board's end
				}
				es[i] = claim(t, id, h, at, ttl, "n", ps...)
			}
		}
		// Arrival: mostly in time order, some late by a little or a lot.
		keys := make([]int64, n)
		for i := range keys {
			keys[i] = es[i].Time
			if rng.IntN(4) == 0 {
				keys[i] += int64(rng.IntN(30_000))
			}
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })

		s := NewState()
		s.every, s.maxCps = 1+rng.IntN(4), 2+rng.IntN(5)
		var taken []Entry
		for _, i := range order {
			s.Add(es[i])
			taken = append(taken, es[i])
			s.check(t)
			switch rng.IntN(6) {
			case 0, 1:
				continue // no read: the next entry may take the fold back again
			case 2:
				ms := int64(rng.IntN(100_000) - 30_000)
				compareFolds(t, fmt.Sprintf("round %d after %d entries, at %d ms", round, len(taken), ms), s, taken, ms, paths)
			default:
				s.Live(time.UnixMilli(70_000))
			}
			s.check(t)
			if len(s.ahead) > 0 {
				t.Fatalf("round %d: folded to the end with states ahead: %v", round, s.ahead)
			}
		}
		compareFolds(t, fmt.Sprintf("round %d", round), s, taken, 70_000, paths)
		refolds += s.refolds
		folds += n
	}
	t.Logf("%d entries folded again for %d taken in", refolds, folds)
}

// TestManyLateClaimsStayCheap: a thousand claims dated back, each read
// after it, each fold again no more than the checkpoints' spacing past the
// point where the claim stops mattering, however many came before it (the
// checkpoints stay spread over the board).
func TestManyLateClaimsStayCheap(t *testing.T) {
	s, now := busyBoard(t, 3000, time.Minute)
	for k := range 1000 {
		// A release of nothing held, dated 10 to 100 s back, changes nothing.
		at := int64(2900-k%90) * 1000
		s.Add(release(t, fmt.Sprintf("late%04d", k), "late@q", at+500, "x.go"))
		before := s.refolds
		s.Live(now)
		if got := s.refolds - before; got > 2*cpEvery+1 {
			t.Fatalf("late entry %d folded %d entries again (%d checkpoints, every %d)", k, got, len(s.cps), s.every)
		}
	}
	if len(s.cps) > cpMax {
		t.Fatalf("%d checkpoints", len(s.cps))
	}
}

// compareFolds fails t unless s answers as plainFold of entries does.
func compareFolds(t *testing.T, what string, s *State, entries []Entry, ms int64, paths []string) {
	t.Helper()
	held, records, order := plainFold(t, entries)
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
	var history []Record
	for _, id := range order {
		history = append(history, records[id])
	}
	if got := s.History(""); !reflect.DeepEqual(got, history) {
		t.Fatalf("%s: history\n%+v\nwant\n%+v", what, got, history)
	}
	for id, want := range records {
		if got, ok := s.Record(id); !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: record %s: %+v, want %+v", what, id, got, want)
		}
	}
}

func holdersOf(hs []Held) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.Path+"="+h.Holder)
	}
	return out
}

// plainFold folds entries from the start in (time, ID) order, decoding
// each body as it goes: the board's fold as it was before checkpoints,
// kept apart from State to check it. It returns the claims held after the
// last entry, in the order they were taken, each entry's record, and the
// entries' IDs in fold order.
func plainFold(t *testing.T, entries []Entry) ([]*Held, map[string]Record, []string) {
	t.Helper()
	es := slices.Clone(entries)
	slices.SortFunc(es, func(a, b Entry) int { return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.ID, b.ID)) })
	var held []*Held
	records := map[string]Record{}
	var order []string
	for _, e := range es {
		order = append(order, e.ID)
		held = slices.DeleteFunc(held, func(h *Held) bool { return h.Expires <= e.Time })
		rec := Record{ID: e.ID, Room: e.Room, Holder: e.Holder, Time: e.Time, Kind: e.Kind}
		switch e.Kind {
		case KindClaim:
			c, err := DecodeClaim(e.Body)
			if err != nil {
				rec.Bad = err.Error()
				break
			}
			rec.Paths, rec.Note, rec.Expires = c.Paths, c.Note, e.Time+c.TTL.Milliseconds()
			if i := slices.IndexFunc(held, func(h *Held) bool {
				return h.Holder != e.Holder && slices.ContainsFunc(c.Paths, func(p string) bool { return Overlap(p, h.Path) })
			}); i >= 0 {
				cp := *held[i]
				rec.Lost = &cp
				break
			}
			for _, p := range c.Paths {
				since := e.Time
				held = slices.DeleteFunc(held, func(h *Held) bool {
					if h.Holder == e.Holder && h.Path == p {
						since = h.Since
						return true
					}
					return false
				})
				h := &Held{Path: p, Holder: e.Holder, Note: c.Note, Since: since,
					Expires: rec.Expires, Event: e.ID, Room: e.Room}
				h.keys()
				held = append(held, h)
			}
		case KindRelease:
			r, err := DecodeRelease(e.Body)
			if err != nil {
				rec.Bad = err.Error()
				break
			}
			rec.Paths = r.Paths
			held = slices.DeleteFunc(held, func(h *Held) bool {
				if h.Holder == e.Holder && (len(r.Paths) == 0 || slices.Contains(r.Paths, h.Path)) {
					rec.Ended = append(rec.Ended, h.Path)
					return true
				}
				return false
			})
		default:
			rec.Bad = fmt.Sprintf("unknown kind %q", e.Kind)
		}
		records[e.ID] = rec
	}
	return held, records, order
}

// TestLateClaimFoldsOnlyWhileItHolds: on a board of 3,000 claims, one a
// second, each held for a minute, a claim dated back (by 100 s, or to the
// board's first second) folds again only the entries from the checkpoint
// before it until its own minute is over, not the board.
func TestLateClaimFoldsOnlyWhileItHolds(t *testing.T) {
	s, now := busyBoard(t, 3000, time.Minute)
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
		want.Add(withBody(t, e))
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

// withBody returns a copy of an entry State took in, its body encoded again
// from what State decoded of it (State lets the body go).
func withBody(t *testing.T, e *Entry) Entry {
	t.Helper()
	c := *e
	var err error
	switch {
	case e.bad != "":
		t.Fatalf("entry %s was refused: %s", e.ID, e.bad)
	case e.Kind == KindClaim:
		c.Body, err = EncodeClaim(e.claim)
	default:
		c.Body, err = EncodeRelease(e.release)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}
