package rooms

import (
	mrand "math/rand/v2"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestPendingShareAccountingUnderRandomOps drives pools of one share
// with random adds (members' and strangers'), releases, discards,
// admissions, vetting and clears, and checks after each step that the
// share holds exactly what the pools hold, that each pool's strangers'
// counts match its items, and that clearing every pool gives the share
// back to zero.
func TestPendingShareAccountingUnderRandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := mrand.New(mrand.NewPCG(seed, seed*7))
		share := NewPendingShare(300, 600<<10)
		authors := []peer.ID{"a1", "a2", "a3", "a4", "a5"}
		admitted := map[peer.ID]bool{}
		pools := make([]*Pending, 3)
		for i := range pools {
			pools[i] = NewPending(200, 400<<10)
			pools[i].Share(share)
			pools[i].Vet(func(a peer.ID) bool { return !admitted[a] })
		}
		next := 0
		var ids []ID
		for step := range 4000 {
			p := pools[rng.IntN(len(pools))]
			switch op := rng.IntN(100); {
			case op < 55:
				a := authors[rng.IntN(len(authors))]
				next++
				id := fakeID(next)
				var missing []ID
				for range 1 + rng.IntN(3) {
					if len(ids) > 0 && rng.IntN(2) == 0 {
						missing = append(missing, ids[rng.IntN(len(ids))])
					} else {
						missing = append(missing, fakeID(1_000_000+rng.IntN(500)))
					}
				}
				e := &Event{Author: a, Body: make([]byte, rng.IntN(8<<10))}
				if p.AddFrom(id, e, make([]byte, rng.IntN(4<<10)), missing, !admitted[a] && rng.IntN(3) > 0) {
					ids = append(ids, id)
				}
			case op < 70:
				if len(ids) > 0 {
					p.Ready(ids[rng.IntN(len(ids))])
				} else {
					p.Ready(fakeID(1_000_000 + rng.IntN(500)))
				}
			case op < 78:
				if len(ids) > 0 {
					p.Discard(ids[rng.IntN(len(ids))])
				}
			case op < 88:
				a := authors[rng.IntN(len(authors))]
				admitted[a] = true
				p.Admit(a)
			case op < 95:
				a := authors[rng.IntN(len(authors))]
				admitted[a] = false
			default:
				p.Clear()
			}
			var ev, by int
			for i, q := range pools {
				ev += q.Len()
				by += q.Bytes()
				s, sb := 0, 0
				for _, it := range q.items {
					if it.stranger {
						s++
						sb += it.cost
						if _, ok := q.byStranger[authorOf(it.Event)][it]; !ok {
							t.Fatalf("seed %d step %d pool %d: a stranger's item is not indexed by its author", seed, step, i)
						}
					}
				}
				n := 0
				for _, w := range q.byStranger {
					n += len(w)
				}
				if s != q.strangers || sb != q.strangerBytes || n != s {
					t.Fatalf("seed %d step %d pool %d: strangers %d/%d bytes %d/%d indexed %d", seed, step, i, q.strangers, s, q.strangerBytes, sb, n)
				}
			}
			if share.Events() != ev || share.Bytes() != by {
				t.Fatalf("seed %d step %d: share holds %d events, %d bytes; the pools %d, %d", seed, step, share.Events(), share.Bytes(), ev, by)
			}
		}
		for _, q := range pools {
			q.Clear()
		}
		if share.Events() != 0 || share.Bytes() != 0 {
			t.Fatalf("seed %d: cleared pools leave the share holding %d events, %d bytes", seed, share.Events(), share.Bytes())
		}
	}
}

// TestPendingShareCountsAtTheirWidest: a share with bounds past what
// its packed word holds is clamped; filled to twice its bounds (the
// ceiling) by items of the largest cost, neither count spills into the
// other, and giving everything back returns it to zero.
func TestPendingShareCountsAtTheirWidest(t *testing.T) {
	s := NewPendingShare(1<<40, 1<<60)
	if s.maxEvents != shareMaxEvents || s.maxBytes != shareMaxBytes {
		t.Fatalf("bounds %d, %d: want them clamped to %d, %d", s.maxEvents, s.maxBytes, shareMaxEvents, shareMaxBytes)
	}
	// Bytes: two items of the byte bound each reach the ceiling.
	if !s.take(shareMaxBytes, true) || !s.take(shareMaxBytes, true) {
		t.Fatal("the ceiling refused two items of the byte bound")
	}
	if s.take(1, true) {
		t.Fatal("the share took a byte past its ceiling")
	}
	if e, b := s.load(); e != 2 || b != 2*shareMaxBytes {
		t.Fatalf("share holds %d events, %d bytes; want 2, %d", e, b, 2*shareMaxBytes)
	}
	s.give(shareMaxBytes)
	s.give(shareMaxBytes)
	// Events: fill the event count to its ceiling with the packed word
	// set directly (2^24 takes would be slow), then one more.
	s.held.Store(uint64(2*shareMaxEvents-1) << shareBytesBits)
	if !s.take(0, true) {
		t.Fatal("the ceiling refused its last event")
	}
	if s.take(0, true) {
		t.Fatal("the share took an event past its ceiling")
	}
	if e, b := s.load(); e != 2*shareMaxEvents || b != 0 {
		t.Fatalf("share holds %d events, %d bytes; want %d, 0", e, b, 2*shareMaxEvents)
	}
	s.give(0)
	if e, _ := s.load(); e != 2*shareMaxEvents-1 {
		t.Fatalf("after one give: %d events", e)
	}
}
