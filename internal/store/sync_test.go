package store

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/poll"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// TestSyncIsSharedAndNeverEarly: callers that come while an fsync runs
// share the next one, and none returns on an fsync that began before it
// called.
func TestSyncIsSharedAndNeverEarly(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rounds atomic.Int32
	gate := make(chan struct{})
	real := db.fsync
	db.fsync = func() error {
		if rounds.Add(1) == 1 {
			<-gate // the first round waits until the others have called
		}
		return real()
	}
	first := make(chan error, 1)
	go func() { first <- db.Sync() }()
	if !poll.Until(time.Minute, func() bool { return rounds.Load() == 1 }) {
		t.Fatal("the first fsync did not start")
	}
	const late = 20
	var wg sync.WaitGroup
	var done atomic.Int32
	for range late {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := db.Sync(); err != nil {
				t.Error(err)
			}
			done.Add(1)
		}()
	}
	// Every late caller is waiting: none may return on the running round.
	if !poll.Until(time.Minute, func() bool {
		db.syncMu.Lock()
		defer db.syncMu.Unlock()
		return len(db.syncWaiters) == late
	}) {
		t.Fatal("the late callers did not queue")
	}
	if n := done.Load(); n != 0 {
		t.Fatalf("%d callers returned on an fsync that began before they called", n)
	}
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := rounds.Load(); n != 2 {
		t.Fatalf("%d fsyncs for 1 + %d callers, want 2 (the late ones share one)", n, late)
	}
}

// TestTimings: each flush round is timed once, in the bucket of its
// length; each write and each new epoch of the journal are timed too.
func TestTimings(t *testing.T) {
	db := openSmall(t, t.TempDir(), 16<<10)
	defer db.Close()
	real := db.fsync
	db.fsync = func() error {
		start := time.Now()
		err := real()
		for time.Since(start) < 3*time.Millisecond { // a slow disk
		}
		return err
	}
	const writes = 40
	for i := range writes {
		if err := db.Apply([]schema.Op{set(fmt.Sprint("k", i), strings.Repeat("v", 1000))}, true); err != nil {
			t.Fatal(err)
		}
	}
	ft := db.Timings().Flush
	cum, n := ft.Cumulative, ft.Count
	if n != writes || len(cum) != len(FlushBuckets) || cum[len(cum)-1] != n {
		t.Fatalf("%d flushes (buckets %v) for %d durable writes", n, cum, writes)
	}
	for i, le := range FlushBuckets {
		if le < 0.003 && cum[i] != 0 {
			t.Fatalf("%d flushes under %v s, all took 3 ms or more: %v", cum[i], le, cum)
		}
	}
	tm := db.Timings()
	if w := tm.Write.Count; w != writes {
		t.Errorf("%d writes timed, %d made", w, writes)
	}
	// One epoch at Open, then one each time 16 KiB filled.
	if e := tm.Epoch.Count; e != uint64(db.j.started) || e < 3 {
		t.Errorf("%d new epochs timed, %d started", e, db.j.started)
	}
}
