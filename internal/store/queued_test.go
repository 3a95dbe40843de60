package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/store/schema"
)

func applyQueued(t *testing.T, db *DB, ops ...schema.Op) {
	t.Helper()
	if err := db.ApplyQueued(ops); err != nil {
		t.Fatal(err)
	}
}

// TestQueuedWriteSeenByNextRead: a read that begins after ApplyQueued
// returns sees the write, and a scan sees every write before it, though
// Badger may not have written them yet.
func TestQueuedWriteSeenByNextRead(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "db"))
	defer db.Close()
	for i := range 2000 {
		k := fmt.Sprintf("q/%05d", i)
		applyQueued(t, db, set(k, k), set("last", k), del(fmt.Sprintf("q/%05d", i-1)))
		want(t, db, k, k)
		want(t, db, "last", k)
		want(t, db, fmt.Sprintf("q/%05d", i-1), "")
		if i%100 == 0 {
			n := 0
			if err := db.ScanFrom([]byte("q/"), nil, false, func(_, _ []byte) bool { n++; return true }); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("after write %d a scan finds %d keys, want 1", i, n)
			}
		}
	}
}

// TestQueuedWritesReplayAfterPowerLoss: queued writes are in the journal
// when ApplyQueued returns, so a Sync makes them durable like any other.
func TestQueuedWritesReplayAfterPowerLoss(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "db"))
	apply(t, db, set("k", "old"), set("a", "1"))
	pl := snapshot(t, db)
	for i := range 50 {
		applyQueued(t, db, set(fmt.Sprintf("q%02d", i), "v"), set("k", fmt.Sprint(i)))
	}
	apply(t, db, del("a"))
	applyQueued(t, db, set("z", "last"))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, pl.crash(nil))
	defer db.Close()
	for i := range 50 {
		want(t, db, fmt.Sprintf("q%02d", i), "v")
	}
	want(t, db, "k", "49")
	want(t, db, "a", "")
	want(t, db, "z", "last")
}

// TestQueuedWriteFailureKeepsTheJournal: when Badger fails a queued write
// after ApplyQueued returned, the store takes no more writes and starts no
// new epoch, which would drop the failed write's record; Close leaves the
// journal, and the next Open writes it to the database.
func TestQueuedWriteFailureKeepsTheJournal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db := openDB(t, dir)
	apply(t, db, set("k0", "v"))
	pl := snapshot(t, db)
	var answers atomic.Int32
	db.j.commitFault = func() error {
		if answers.Add(1) == 2 {
			return errors.New("the test's I/O error")
		}
		return nil
	}
	if err := db.Problem(); err != nil || refusing(t, db) != 0 {
		t.Fatalf("before the failure the store's problem is %v and its gauge %v", err, refusing(t, db))
	}
	epochs := db.j.started
	applyQueued(t, db, set("k1", "v"))
	applyQueued(t, db, set("k2", "v"))
	deadline := time.Now().Add(10 * time.Second)
	for db.j.failure() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no failure 10 s after a queued write failed")
		}
		runtime.Gosched()
	}
	if err := db.Problem(); err == nil || !strings.Contains(err.Error(), "restart") || refusing(t, db) != 1 {
		t.Fatalf("after the failure the store's problem is %v and its gauge %v", err, refusing(t, db))
	}
	err := db.Apply([]schema.Op{set("k3", "v")}, false)
	if err == nil || !strings.Contains(err.Error(), "the test's I/O error") {
		t.Fatalf("a write after the failure: %v", err)
	}
	if err := db.ApplyQueued([]schema.Op{set("k4", "v")}); err == nil {
		t.Fatal("a queued write taken after the failure")
	}
	// A room asks before it publishes its own events.
	if err := db.CheckSpace(100); err == nil {
		t.Fatal("CheckSpace finds nothing wrong after the failure")
	}
	// A flush still makes the journal durable, with the failed write in it.
	if err := db.Sync(); err != nil {
		t.Fatalf("Sync after the failure: %v", err)
	}
	if db.j.started != epochs {
		t.Fatalf("%d new epochs after the failure", db.j.started-epochs)
	}
	if err := db.Close(); err == nil {
		t.Fatal("Close of a failed store returned no error")
	}
	data, err := os.ReadFile(filepath.Join(dir, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pl.snap, JournalName), data, 0o600); err != nil {
		t.Fatal(err)
	}

	// The journal Close kept, beside the database it left and beside a
	// copy that lost every write after the snapshot.
	for _, d := range []string{dir, pl.snap} {
		db = openDB(t, d)
		want(t, db, "k0", "v")
		want(t, db, "k1", "v")
		want(t, db, "k2", "v")
		want(t, db, "k3", "")
		want(t, db, "k4", "")
		apply(t, db, set("k5", "v")) // a restart takes writes again
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
