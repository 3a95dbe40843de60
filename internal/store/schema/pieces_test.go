package schema

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// kv is a sorted key-value store that takes ops as the database does.
type kv map[string][]byte

func (m kv) apply(t testing.TB, ops []Op) {
	t.Helper()
	for _, op := range ops {
		if op.Delete {
			delete(m, string(op.Key))
			continue
		}
		m[string(op.Key)] = bytes.Clone(op.Val)
	}
}

func (m kv) join(prefix []byte) ([]Joined, []error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if strings.HasPrefix(k, string(prefix)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	j := NewJoiner(prefix)
	for _, k := range keys {
		j.Add([]byte(k), m[k])
	}
	return j.Done()
}

func value(n int, seed byte) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(i*7) + seed
	}
	if n > 0 {
		v[0] = 0xa5 // a CBOR map, as the callers' values are
	}
	return v
}

func set(t testing.TB, m kv, key, val []byte) []Op {
	t.Helper()
	ops, err := SetPieces(key, val)
	if err != nil {
		t.Fatal(err)
	}
	m.apply(t, ops)
	return ops
}

func TestPiecesRoundTrip(t *testing.T) {
	max := MaxPieces * PieceSize
	sizes := []int{0, 1, PieceSize - 1, PieceSize, PieceSize + 1, 2*PieceSize + 17, 4900, max - 1, max, max + 1, max + 5000}
	a, b := Contact([]byte("peer-a")), Contact([]byte("peer-b"))
	for _, n := range sizes {
		for _, before := range sizes {
			m := kv{}
			set(t, m, a, value(before, 1))
			set(t, m, b, value(300, 2))
			ops := set(t, m, a, value(n, 3))
			for _, op := range ops {
				if !op.Delete && len(op.Val) >= 1000 && n <= max {
					t.Errorf("size %d: a piece of %d bytes", n, len(op.Val))
				}
			}
			recs, bad := m.join(ContactPrefix())
			if len(bad) > 0 {
				t.Fatalf("size %d after %d: %v", n, before, bad)
			}
			if len(recs) != 2 || !bytes.Equal(recs[0].Key, a) || !bytes.Equal(recs[0].Val, value(n, 3)) ||
				!bytes.Equal(recs[1].Key, b) || !bytes.Equal(recs[1].Val, value(300, 2)) {
				t.Fatalf("size %d after %d: %d records back", n, before, len(recs))
			}
			wantKeys := 2
			if n > PieceSize && n <= max {
				wantKeys = 1 + (n+PieceSize-1)/PieceSize
			}
			if len(m) != wantKeys {
				t.Errorf("size %d after %d: %d keys, want %d", n, before, len(m), wantKeys)
			}
			m.apply(t, DeletePieces(a))
			if recs, bad := m.join(ContactPrefix()); len(recs) != 1 || len(bad) > 0 || len(m) != 1 {
				t.Fatalf("size %d deleted: %d records, %d keys, %v", n, len(recs), len(m), bad)
			}
		}
	}
}

// TestPiecesOldWholeValue: a record an older Parley wrote whole under
// its key reads as it is, and a rewrite in pieces replaces it.
func TestPiecesOldWholeValue(t *testing.T) {
	a := NodeCard([]byte("peer-a"))
	m := kv{string(a): value(4600, 1)}
	recs, bad := m.join(NodeCardPrefix())
	if len(bad) > 0 || len(recs) != 1 || !bytes.Equal(recs[0].Val, value(4600, 1)) {
		t.Fatalf("old record: %d, %v", len(recs), bad)
	}
	set(t, m, a, value(2000, 2))
	recs, bad = m.join(NodeCardPrefix())
	if len(bad) > 0 || len(recs) != 1 || !bytes.Equal(recs[0].Val, value(2000, 2)) || len(m) != 3 {
		t.Fatalf("rewritten: %d records, %d keys, %v", len(recs), len(m), bad)
	}
}

// TestPiecesMarkedValue: a value that begins as a first piece does is
// kept in pieces however short.
func TestPiecesMarkedValue(t *testing.T) {
	a := Contact([]byte("p"))
	for _, n := range []int{1, 10, PieceSize, PieceSize + 1} {
		m := kv{}
		v := make([]byte, n)
		set(t, m, a, v)
		if recs, bad := m.join(ContactPrefix()); len(bad) > 0 || len(recs) != 1 || !bytes.Equal(recs[0].Val, v) {
			t.Fatalf("%d: %v", n, bad)
		}
	}
	if _, err := SetPieces(a, make([]byte, MaxPieces*PieceSize+1)); err == nil {
		t.Fatal("an over-long value beginning with the mark was taken")
	}
}

// TestPiecesDamaged: pieces that do not make the value are reported, and
// no value cut short is returned; the other records read.
func TestPiecesDamaged(t *testing.T) {
	a, b, c := Contact([]byte("peer-a")), Contact([]byte("peer-b")), Contact([]byte("peer-c"))
	cases := map[string]func(m kv){
		"middle piece missing": func(m kv) { delete(m, string(piece(b, 2))) },
		"last piece missing":   func(m kv) { delete(m, string(piece(b, 5))) },
		"first piece missing":  func(m kv) { delete(m, string(b)) },
		"piece past the count": func(m kv) { m[string(piece(b, 6))] = []byte("x") },
		"piece changed":        func(m kv) { m[string(piece(b, 3))][7] ^= 1 },
		"piece cut":            func(m kv) { m[string(piece(b, 3))] = m[string(piece(b, 3))][:10] },
		"first piece cut":      func(m kv) { m[string(b)] = m[string(b)][:2] },
		"count changed":        func(m kv) { m[string(b)][1] = 4 },
		"count zero":           func(m kv) { m[string(b)][1] = 0 },
		"piece of whole":       func(m kv) { m[string(b)] = value(30, 9) }, // b reads whole

		"piece zero":   func(m kv) { m[string(piece(b, 0))] = []byte("x") },
		"key too long": func(m kv) { m[string(b)+"xy"] = []byte("x") }, // b reads
	}
	for name, damage := range cases {
		m := kv{}
		set(t, m, a, value(3000, 1))
		set(t, m, b, value(5000, 2))
		set(t, m, c, value(100, 3))
		damage(m)
		recs, bad := m.join(ContactPrefix())
		if len(bad) == 0 || !errors.Is(bad[0], ErrDamagedPieces) {
			t.Errorf("%s: damage not reported: %v", name, bad)
		}
		for _, r := range recs {
			if bytes.Equal(r.Key, b) && name != "piece of whole" && name != "key too long" {
				t.Errorf("%s: the damaged record was returned (%d bytes)", name, len(r.Val))
			}
		}
		if !slices.ContainsFunc(recs, func(r Joined) bool { return bytes.Equal(r.Key, a) && bytes.Equal(r.Val, value(3000, 1)) }) ||
			!slices.ContainsFunc(recs, func(r Joined) bool { return bytes.Equal(r.Key, c) && bytes.Equal(r.Val, value(100, 3)) }) {
			t.Errorf("%s: the sound records were not returned", name)
		}
	}
}

// TestPiecesOfPeersOfOtherLengths: keys of peers of other lengths, and of
// peers that are prefixes of one another, never mix.
func TestPiecesOfPeersOfOtherLengths(t *testing.T) {
	m := kv{}
	peers := [][]byte{[]byte("a"), []byte("ab"), {}, []byte("a\x01"), []byte("a\x00"), bytes.Repeat([]byte{0xff}, 255), bytes.Repeat([]byte{1}, 38)}
	for i, p := range peers {
		set(t, m, Contact(p), value(1000*i+500, byte(i)))
	}
	recs, bad := m.join(ContactPrefix())
	if len(bad) > 0 || len(recs) != len(peers) {
		t.Fatalf("%d records, %v", len(recs), bad)
	}
	for i, p := range peers {
		if !slices.ContainsFunc(recs, func(r Joined) bool {
			return bytes.Equal(r.Key, Contact(p)) && bytes.Equal(r.Val, value(1000*i+500, byte(i)))
		}) {
			t.Errorf("peer %q not read back", p)
		}
	}
}

func FuzzPieces(f *testing.F) {
	f.Add([]byte("p"), 0, 5000, byte(1))
	f.Add([]byte("peer"), 14400, 901, byte(0))
	f.Fuzz(func(t *testing.T, p []byte, first, second int, fill byte) {
		if len(p) > 255 || first < 0 || second < 0 || first > 20000 || second > 20000 {
			t.Skip()
		}
		key := Contact(p)
		v1, v2 := bytes.Repeat([]byte{fill}, first), bytes.Repeat([]byte{fill ^ 0x5a}, second)
		m := kv{}
		if _, err := SetPieces(key, v1); err != nil {
			return
		}
		set(t, m, key, v1)
		ops, err := SetPieces(key, v2)
		if err != nil {
			return
		}
		m.apply(t, ops)
		recs, bad := m.join(ContactPrefix())
		if len(bad) > 0 || len(recs) != 1 || !bytes.Equal(recs[0].Val, v2) {
			t.Fatalf("%d then %d bytes: %d records, %v", first, second, len(recs), bad)
		}
	})
}
