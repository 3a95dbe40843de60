package store

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// TestJournalCutAtEveryByteOfItsLastRecord: a crash may leave the last
// record of the journal cut at any byte (the file cut short there, or
// the rest of the record never written: zeros, as the journal's file is
// made ahead). At every such byte the database opens, holds every write
// of the records before it and none of the cut one's, and takes and
// replays new writes after it as usual. Opening Badger takes seconds
// under the race detector, so the journal's reading is checked at every
// byte and a real open at the record's second byte (the file cut) and its last
// (zeros after).
func TestJournalCutAtEveryByteOfItsLastRecord(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "db"))
	pl := snapshot(t, db)
	apply(t, db, set("k1", "1"))
	apply(t, db, set("k2", "2"), del("k1"))
	apply(t, db, set("k3", "three"), set("k4", "four"))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	var journal []byte
	snap := pl.crash(func(b []byte) []byte {
		journal = append([]byte(nil), b...)
		return b
	})
	start := recordAt(t, journal, 3)
	end := start + recordHeaderLen + int(binary.BigEndian.Uint32(journal[start+1:]))
	for cut := start; cut < end; cut++ {
		for _, zeros := range []bool{false, true} {
			j := append([]byte(nil), journal[:cut]...)
			if zeros {
				j = append(j, make([]byte, len(journal)-cut)...)
			}
			epoch, ok := parseJournalHeader(j)
			if recs := readRecords(j[journalHeaderLen:], epoch); !ok || len(recs) != 2 {
				t.Fatalf("cut at byte %d of %d (zeros %v): %d records read, want 2", cut-start, end-start, zeros, len(recs))
			}
		}
	}
	for _, c := range []struct {
		cut   int
		zeros bool
	}{{start + 1, false}, {end - 1, true}} {
		{
			cut, zeros := c.cut, c.zeros
			dir := filepath.Join(t.TempDir(), "db")
			copyFolder(t, snap, dir, JournalName)
			j := append([]byte(nil), journal[:cut]...)
			if zeros {
				j = append(j, make([]byte, len(journal)-cut)...)
			}
			if err := os.WriteFile(filepath.Join(dir, JournalName), j, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := OpenConfig(Config{Dir: dir, MinFree: -1})
			if err != nil {
				t.Fatalf("cut at byte %d of %d (zeros %v): open: %v", cut-start, end-start, zeros, err)
			}
			want(t, db, "k1", "")
			want(t, db, "k2", "2")
			want(t, db, "k3", "")
			want(t, db, "k4", "")
			// The next epoch takes writes and gives them back after
			// another power loss.
			pl := snapshot(t, db)
			apply(t, db, set("k5", "5"))
			if err := db.Sync(); err != nil {
				t.Fatal(err)
			}
			db = openDB(t, pl.crash(nil))
			want(t, db, "k2", "2")
			want(t, db, "k5", "5")
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if t.Failed() {
				t.Fatalf("cut at byte %d of %d (zeros %v)", cut-start, end-start, zeros)
			}
		}
	}
}
