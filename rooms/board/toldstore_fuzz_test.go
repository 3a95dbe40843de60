package board

import "testing"

// FuzzDecodeTold: a stored notice told that does not read (a damaged
// store, a file restored from elsewhere) is an error, never a panic, and
// one that reads has an ID of 1 to maxToldID bytes, and reads the same
// once written again.
func FuzzDecodeTold(f *testing.F) {
	b, err := encodeTold("lost:0123abcd", 1_800_000_000_000)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{0xa1, 0x01, 0x60})
	f.Add([]byte{0xa2, 0x01, 0x61, 'x', 0x02, 0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, expires, err := decodeTold(b)
		if err != nil {
			return
		}
		if id == "" || len(id) > maxToldID {
			t.Fatalf("a notice told read with an ID of %d bytes", len(id))
		}
		again, err := encodeTold(id, expires)
		if err != nil {
			t.Fatal(err)
		}
		id2, expires2, err := decodeTold(again)
		if err != nil || id2 != id || expires2 != expires {
			t.Fatalf("a notice told written again reads %q %d, %v; was %q %d", id2, expires2, err, id, expires)
		}
	})
}
