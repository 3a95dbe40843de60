package board

import (
	"testing"
	"time"
)

// FuzzDecodeWatch: a stored watch that does not read (a damaged store, a
// file restored from elsewhere) is an error, never a panic, and one that
// reads has the paths and ttl a claim may have, and reads the same once
// written again.
func FuzzDecodeWatch(f *testing.F) {
	w := &watch{project: "p", paths: []string{"a.go", "src/**"}, note: "n", ttl: time.Hour,
		was: Held{Path: "src/x.go", Holder: "alice@12D3", Note: "mine", Since: 1, Expires: 2, Event: "e", Room: "r"}, until: time.UnixMilli(3)}
	b, err := encodeWatch(w)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{0xa1, 0x02, 0x81, 0x60})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeWatch(b)
		if err != nil {
			return
		}
		if len(w.paths) == 0 || len(w.paths) > MaxPaths || w.ttl < 0 || w.ttl > MaxTTL {
			t.Fatalf("a watch read with %d paths, ttl %v", len(w.paths), w.ttl)
		}
		if _, err := CheckPaths(w.paths, true); err != nil {
			t.Fatalf("a watch read with paths a claim may not have: %v", err)
		}
		again, err := encodeWatch(w)
		if err != nil {
			t.Fatal(err)
		}
		w2, err := decodeWatch(again)
		if err != nil || w2.project != w.project || len(w2.paths) != len(w.paths) || w2.note != w.note || w2.ttl != w.ttl || w2.was.Path != w.was.Path {
			t.Fatalf("a watch written again reads %+v, %v; was %+v", w2, err, w)
		}
	})
}
