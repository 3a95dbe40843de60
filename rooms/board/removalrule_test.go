package board

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// m is a membership entry: kind, of node peer in room, at ms.
func m(id, kind, room, peer string, at int64) Entry {
	return Entry{ID: id, Room: room, Holder: "@" + peer, Time: at, Kind: kind}
}

// TestRemovalCountsBoardWideOnlyFromTheHost: the rule of State.off on a
// board of three nodes. v made room A (v's host is v), c joined it (c's
// host is v); m made room M and brought v and c in. m's removal of v
// ends only v's claims in M, and ignores v's later claims there; v's
// removal of c ends c's claims in every room, M too, and c's claims in a
// room c makes later are ignored, until a room of v invites c again.
func TestRemovalCountsBoardWideOnlyFromTheHost(t *testing.T) {
	s := NewState()
	for _, e := range []Entry{
		m("a0", KindCreated, "A", "v", 1000),
		m("a1", KindInvited, "A", "c", 1100),
		m("a2", KindJoined, "A", "c", 1200),
		m("a3", KindInvited, "A", "m", 1300),
		m("a4", KindJoined, "A", "m", 1400),
		in("A", claim(t, "v1", "vic@v", 2000, time.Hour, "v in A", "x.go")),
		m("m0", KindCreated, "M", "m", 3000),
		m("m1", KindInvited, "M", "v", 3100),
		m("m2", KindJoined, "M", "v", 3200),
		m("m3", KindInvited, "M", "c", 3300),
		m("m4", KindJoined, "M", "c", 3400),
		in("M", claim(t, "v2", "vic@v", 4000, time.Hour, "v in M", "y.go")),
		in("M", claim(t, "c1", "car@c", 4100, time.Hour, "c in M", "z.go")),
		m("m5", KindRemoved, "M", "v", 5000),
		in("A", claim(t, "v3", "vic@v", 6000, time.Hour, "v in A again", "w.go")),
		in("M", claim(t, "v4", "vic@v", 6100, time.Hour, "v in M after its removal", "u.go")),
	} {
		s.Add(e)
	}
	at := time.UnixMilli(7000)
	if got, want := holders(s.Live(at)), []string{"w.go=vic@v", "x.go=vic@v", "z.go=car@c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after m's removal of v from M: %v, want %v", got, want)
	}
	if !s.Removed("v", "M") || s.Removed("v", "A") {
		t.Fatalf("v removed from M %v, from A %v", s.Removed("v", "M"), s.Removed("v", "A"))
	}

	// v, c's host, removes c from A: c is off the whole board.
	s.Add(m("a5", KindRemoved, "A", "c", 8000))
	s.Add(m("c0", KindCreated, "C", "c", 8100))
	s.Add(in("C", claim(t, "c2", "car@c", 8200, time.Hour, "c in its own room", "q.go")))
	if got, want := holders(s.Live(time.UnixMilli(8300))), []string{"w.go=vic@v", "x.go=vic@v"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after v's removal of c: %v, want %v", got, want)
	}
	if r, _ := s.Record("c2"); r.Bad == "" {
		t.Fatalf("c's claim in its own room after its removal: %+v", r)
	}
	// m's invite of c into M does not bring c back; v's invite into A does.
	s.Add(m("m6", KindInvited, "M", "c", 9000))
	s.Add(in("M", claim(t, "c3", "car@c", 9100, time.Hour, "c in M", "p.go")))
	s.Add(m("a6", KindInvited, "A", "c", 9200))
	s.Add(in("A", claim(t, "c4", "car@c", 9300, time.Hour, "c back", "o.go")))
	if got, want := holders(s.Live(time.UnixMilli(9400))), []string{"o.go=car@c", "w.go=vic@v", "x.go=vic@v"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the invites of c: %v, want %v", got, want)
	}
}

// in sets e's room.
func in(room string, e Entry) Entry {
	e.Room = room
	return e
}

// TestRemovalFoldsAlikeInAnyOrder: the same claims, creates, joins,
// invites and removals, taken in in any order with reads between them and
// checkpoints close together, fold to what they fold to in time order:
// a membership entry that comes late folds the board again to its end
// (it changes no held claim where it stands, so the fold must not meet
// the fold before there), and a room's create event that comes after
// claims dated before it decides them too.
func TestRemovalFoldsAlikeInAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	nodes := []string{"p", "q", "r"}
	roomsOf := map[string]string{"p": "P", "q": "Q", "r": "R"}
	paths := []string{"a.go", "b/**", "c.go", "*.go", "d/e.go"}
	for round := range 300 {
		var es []Entry
		for i, n := range nodes {
			es = append(es, m(fmt.Sprintf("r%dc%d", round, i), KindCreated, roomsOf[n], n, int64(rng.IntN(20_000))))
		}
		for i := range 60 + rng.IntN(60) {
			id := fmt.Sprintf("r%de%03d", round, i)
			at := int64(rng.IntN(60_000))
			n := nodes[rng.IntN(len(nodes))]
			room := roomsOf[nodes[rng.IntN(len(nodes))]]
			switch rng.IntN(8) {
			case 0:
				es = append(es, m(id, KindJoined, room, n, at))
			case 1:
				es = append(es, m(id, KindInvited, room, n, at))
			case 2:
				es = append(es, m(id, KindRemoved, room, n, at))
			case 3:
				es = append(es, release(t, id, "a@"+n, at))
			default:
				es = append(es, claim(t, id, "a@"+n, at, time.Duration(1+rng.IntN(30))*time.Second, "n", paths[rng.IntN(len(paths))]))
				es[len(es)-1].Room = room
			}
		}
		sorted := slices.Clone(es)
		slices.SortFunc(sorted, func(a, b Entry) int { return order(&a, &b) })
		want := NewState()
		for _, e := range sorted {
			want.Add(e)
		}

		s := NewState()
		s.every, s.maxCps = 1+rng.IntN(3), 2+rng.IntN(4)
		rng.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
		for _, e := range es {
			s.Add(e)
			if rng.IntN(3) == 0 {
				s.Live(time.UnixMilli(0))
			}
		}
		for _, ms := range []int64{10_000, 30_000, 50_000, 70_000} {
			at := time.UnixMilli(ms)
			if got, w := s.Live(at), want.Live(at); !reflect.DeepEqual(got, w) {
				t.Fatalf("round %d at %d ms: live %v, want %v", round, ms, holders(got), holders(w))
			}
		}
		if got, w := s.History(""), want.History(""); !reflect.DeepEqual(got, w) {
			t.Fatalf("round %d: history\n%+v\nwant\n%+v", round, got, w)
		}
		for _, n := range nodes {
			for _, room := range roomsOf {
				if s.Removed(n, room) != want.Removed(n, room) {
					t.Fatalf("round %d: Removed(%s, %s) %v, want %v", round, n, room, s.Removed(n, room), want.Removed(n, room))
				}
			}
		}
	}
}
