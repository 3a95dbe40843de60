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

// TestJournalKeptAfterBadgerFailedToSync: when an fsync of Badger's logs
// fails, the kernel may have dropped their pages (Linux marks them clean
// and the next fsync succeeds), so the journal's records are the only
// copy on disk of the writes Sync acknowledged. A later new epoch, whose
// fsyncs then succeed, must not drop them: the store takes no more
// writes, and Close keeps the journal for the next Open to replay, as
// after a failed queued write. Modelled here: Badger's folder as it was
// before the write (its pages lost), the journal as Close left it.
func TestJournalKeptAfterBadgerFailedToSync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db := openDB(t, dir)
	pl := snapshot(t, db)
	apply(t, db, set("acked", "1"))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	failed := false
	fileSync = func(f *os.File) error {
		if !failed {
			failed = true
			return unix.EIO
		}
		return f.Sync()
	}
	defer func() { fileSync = (*os.File).Sync }()
	db.j.mu.Lock()
	err := db.j.newEpoch() // as a full journal starts one
	db.j.mu.Unlock()
	if err == nil {
		t.Fatal("a new epoch whose fsync of Badger's logs failed succeeded")
	}
	_ = db.Apply([]schema.Op{set("later", "2")}, true) // its new epoch's fsyncs succeed
	_ = db.Close()
	journal, err := os.ReadFile(filepath.Join(dir, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pl.snap, JournalName), journal, 0o600); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, pl.snap)
	defer db.Close()
	want(t, db, "acked", "1")
}
