package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// swapJournalFD puts a new descriptor of the journal's file, opened with
// flag, under the journal's own descriptor number, so that its writes
// fail (os.O_RDONLY) or work again (os.O_RDWR).
func swapJournalFD(t *testing.T, db *DB, flag int) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(db.dir, JournalName), flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Dup3(int(f.Fd()), int(db.j.f.Fd()), 0); err != nil {
		t.Fatal(err)
	}
}

// TestJournalFailedNewEpochTakesNoRecordOfTheOldOne: a new epoch that
// fails after Badger recorded the next epoch (the journal's header not
// rewritten: an I/O error, a full disk on a copy-on-write file system)
// must not let a later write append a record of the old epoch: Sync
// would acknowledge it, and after a power loss Open finds a journal not
// of Badger's epoch and replays none of it.
func TestJournalFailedNewEpochTakesNoRecordOfTheOldOne(t *testing.T) {
	db := openSmall(t, filepath.Join(t.TempDir(), "db"), 16<<10)
	for db.j.off+2000 < db.j.max {
		apply(t, db, set("fill", "x"))
	}
	epoch := db.j.epoch
	swapJournalFD(t, db, os.O_RDONLY)
	if err := db.Apply([]schema.Op{set("big", string(bytes.Repeat([]byte("b"), 3000)))}, false); err == nil {
		t.Fatal("a write that needed a new epoch went on with the journal's header unwritable")
	}
	swapJournalFD(t, db, os.O_RDWR)
	stored, err := db.j.storedEpoch()
	if err != nil || stored != epoch+1 {
		t.Fatalf("Badger's epoch %d (%v), want %d: the failure came too early to test", stored, err, epoch+1)
	}
	pl := snapshot(t, db)
	apply(t, db, set("acked", "1"))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, pl.crash(nil))
	defer db.Close()
	want(t, db, "acked", "1")
}
