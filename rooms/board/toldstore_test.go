package board_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/rooms/board"
)

// toldKeys counts the store's keys of notices told, and fails the test
// on a value of store.ValueThreshold bytes or more.
func toldKeys(t *testing.T, db *store.DB) int {
	t.Helper()
	n := 0
	err := db.Scan(schema.BoardToldPrefix(), func(_, v []byte) bool {
		n++
		if len(v) >= store.ValueThreshold {
			t.Errorf("a notice told's value of %d bytes in the store", len(v))
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func expiring(s *board.Service, agent string, take bool) int {
	n := 0
	for _, x := range s.Notices(agentName(agent), take) {
		if x.Kind == board.NoticeExpiring {
			n++
		}
	}
	return n
}

// TestBoardNoticesToldExpireInTheStore: alice's claim of an hour is near
// its end, and she is told claim_expiring: the store keeps that it was
// told, and a node started on the store does not tell it again. Once the
// claim has expired, the record is deleted: by the running node at its
// next look at the notices, and by a node started after that.
func TestBoardNoticesToldExpireInTheStore(t *testing.T) {
	f := newWatchFixture(t)
	st := newStore(t)
	s := f.service(st)
	if err := f.claim(s, "alice", "a.go"); err != nil {
		t.Fatal(err)
	}
	if err := f.claim(s, "carol", "c.go"); err != nil {
		t.Fatal(err)
	}
	f.set(56 * time.Minute)
	if n := expiring(s, "alice", true); n != 1 {
		t.Fatalf("alice told %d claim_expiring, want 1", n)
	}
	if n := toldKeys(t, st); n != 1 {
		t.Fatalf("%d keys stored for one notice told", n)
	}
	s2 := f.service(st)
	if n := expiring(s2, "alice", true); n != 0 {
		t.Fatalf("alice told claim_expiring again by a node started on the store (%d)", n)
	}
	// carol was not told before: she is, once.
	if n := expiring(s2, "carol", true); n != 1 || expiring(f.service(st), "carol", true) != 0 {
		t.Fatalf("carol told %d claim_expiring, want 1, then none", n)
	}
	if n := toldKeys(t, st); n != 2 {
		t.Fatalf("%d keys stored for two notices told", n)
	}
	f.set(61 * time.Minute) // both claims have expired
	if n := expiring(s2, "alice", false); n != 0 || board.Told(s2) != 0 || toldKeys(t, st) != 0 {
		t.Fatalf("after the claims expired: %d told, %d remembered, %d keys", n, board.Told(s2), toldKeys(t, st))
	}
	// A node that did not look again: the node started after deletes them.
	f.set(56 * time.Minute)
	if err := board.Tell(s, []string{"expiring:e:x.go"}, []int64{f.now().Add(time.Minute).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	f.set(61 * time.Minute)
	if s3 := f.service(st); board.Told(s3) != 0 || toldKeys(t, st) != 0 {
		t.Fatalf("a node started after the claim expired remembers %d, stores %d keys", board.Told(s3), toldKeys(t, st))
	}
}

// TestBoardNoticesToldDamagedDropped: a record of a notice told that
// cannot be read (a garbled value, one under another notice's key, a
// piece without its record, a key of no record, one of a claim expiring
// past any claim's ttl) is dropped at start, with its keys, and its
// notice may be told again; the others are read back.
func TestBoardNoticesToldDamagedDropped(t *testing.T) {
	f := newWatchFixture(t)
	st := newStore(t)
	s := f.service(st)
	soon := f.now().Add(time.Hour).UnixMilli()
	if err := board.Tell(s, []string{"lost:a", "lost:b", "lost:c", "lost:d"}, []int64{soon, soon, soon, soon}); err != nil {
		t.Fatal(err)
	}
	if n := toldKeys(t, st); n != 4 || !board.IsTold(f.service(st), "lost:d") {
		t.Fatalf("%d keys stored for 4 notices told", n)
	}
	other, err := schema.SetPieces(schema.BoardTold("lost:b"), mustTold(t, "lost:z", soon))
	if err != nil {
		t.Fatal(err)
	}
	far, err := schema.SetPieces(schema.BoardTold("lost:c"), mustTold(t, "lost:c", f.now().Add(board.MaxTTL+time.Hour).UnixMilli()))
	if err != nil {
		t.Fatal(err)
	}
	ops := []schema.Op{
		{Key: schema.BoardTold("lost:a"), Val: []byte{0xa2, 0x01}},                  // garbled
		{Key: append(bytes.Clone(schema.BoardTold("lost:y")), 1), Val: []byte("}")}, // a piece of no record
		{Key: []byte("b/t/junk"), Val: []byte("x")},                                 // no record
	}
	ops = append(append(ops, other...), far...)
	if err := st.Apply(ops, false); err != nil {
		t.Fatal(err)
	}
	s2 := f.service(st)
	if n := board.Told(s2); n != 1 || !board.IsTold(s2, "lost:d") || toldKeys(t, st) != 1 {
		t.Fatalf("%d remembered, %d keys, want lost:d alone", n, toldKeys(t, st))
	}
}

func mustTold(t *testing.T, id string, expires int64) []byte {
	t.Helper()
	b, err := board.EncodeTold(id, expires)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBoardNoticesToldBounded: past the bound (board.SetMaxTold: 16,384
// on a node, 500 here), the notices told of the claims that expire first
// are forgotten, in memory and in the store; a node started on the store
// reads back the rest, and one started with a lower bound keeps the
// latest to expire and deletes the others from the store.
func TestBoardNoticesToldBounded(t *testing.T) {
	if was := board.SetMaxTold(t, 500); was != 16384 {
		t.Fatalf("the bound is %d, not the 16,384 ARCHITECTURE.md says", was)
	}
	const max, over = 500, 10
	f := newWatchFixture(t)
	st := newStore(t)
	s := f.service(st)
	base := f.now().Add(time.Hour).UnixMilli()
	id := func(i int) string { return fmt.Sprintf("contested:%06d", i) }
	var ids []string
	var exp []int64
	for i := range max + over {
		ids = append(ids, id(i))
		exp = append(exp, base+int64(i))
	}
	if err := board.Tell(s, ids, exp); err != nil {
		t.Fatal(err)
	}
	if n, k := board.Told(s), toldKeys(t, st); n != max || k != max {
		t.Fatalf("%d remembered, %d keys, want %d", n, k, max)
	}
	if board.IsTold(s, id(over-1)) || !board.IsTold(s, id(over)) {
		t.Fatal("not the first to expire forgotten")
	}
	if s2 := f.service(st); board.Told(s2) != max || !board.IsTold(s2, id(max+over-1)) {
		t.Fatalf("a node started on the store remembers %d", board.Told(s2))
	}
	board.SetMaxTold(t, 100)
	s3 := f.service(st)
	if n, k := board.Told(s3), toldKeys(t, st); n != 100 || k != 100 || !board.IsTold(s3, id(max+over-100)) || board.IsTold(s3, id(max+over-101)) {
		t.Fatalf("a node started with a bound of 100 remembers %d, stores %d keys", n, k)
	}
}
