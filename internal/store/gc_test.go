package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// The garbage store: gcKeys keys, each written gcRounds times with values
// of gcValueSize bytes, into value-log files of 1 MiB.
const (
	gcKeys      = 4
	gcRounds    = 30
	gcOpens     = 3
	gcValueSize = 200 << 10
)

func gcKey(k int) []byte { return []byte(fmt.Sprintf("big/%d", k)) }

// gcValue is key k's value of round r.
func gcValue(k, r int) []byte {
	v := bytes.Repeat([]byte{byte('a' + k)}, gcValueSize)
	binary.BigEndian.PutUint32(v, uint32(r))
	return v
}

func openConfig(t *testing.T, cfg Config) *DB {
	t.Helper()
	db, err := OpenConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// garbageStore opens cfg.Dir (with 1 MiB value-log files) as a store whose
// value log is mostly overwritten values. The writes are spread over
// gcOpens opens, each Close flushing the memtable as a table, and the
// tables are then compacted into one level: the compaction drops the old
// versions and tells Badger how much of each value-log file is garbage.
func garbageStore(t *testing.T, cfg Config) (*DB, Config) {
	t.Helper()
	cfg.valueLogFileSize = 1 << 20
	for o := range gcOpens {
		db := openConfig(t, cfg)
		for r := o * gcRounds / gcOpens; r < (o+1)*gcRounds/gcOpens; r++ {
			for k := range gcKeys {
				if err := db.Apply([]schema.Op{{Key: gcKey(k), Val: gcValue(k, r)}}, false); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db := openConfig(t, cfg)
	t.Cleanup(func() { db.Close() })
	if err := db.bdb.Flatten(1); err != nil {
		t.Fatal(err)
	}
	return db, cfg
}

// wantLatest checks that every key of the garbage store reads its last
// value.
func wantLatest(t *testing.T, db *DB) {
	t.Helper()
	for k := range gcKeys {
		v, err := db.Get(gcKey(k))
		if err != nil {
			t.Fatalf("%s: %v", gcKey(k), err)
		}
		if !bytes.Equal(v, gcValue(k, gcRounds-1)) {
			t.Fatalf("%s reads round %d, want %d", gcKey(k), binary.BigEndian.Uint32(v), gcRounds-1)
		}
	}
}

// vlogFiles maps the value-log files of dir to their sizes.
func vlogFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".vlog" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = info.Size()
	}
	return out
}

func sumSizes(files map[string]int64) int64 {
	var n int64
	for _, s := range files {
		n += s
	}
	return n
}

// TestCollectGarbageReclaimsTheValueLog: the value-log files of
// overwritten values are deleted, and every key keeps its last value, also
// after a reopen.
func TestCollectGarbageReclaimsTheValueLog(t *testing.T) {
	db, cfg := garbageStore(t, Config{Dir: t.TempDir(), Logger: testLogger(t), MinFree: -1})
	before := sumSizes(vlogFiles(t, cfg.Dir))
	n, err := db.CollectGarbage(100)
	if err != nil {
		t.Fatal(err)
	}
	after := sumSizes(vlogFiles(t, cfg.Dir))
	t.Logf("%d value-log files rewritten; value log %d -> %d bytes", n, before, after)
	if n == 0 {
		t.Fatal("no value-log file rewritten")
	}
	// 24 MiB written, 800 KiB of it live.
	if after > before/3 {
		t.Fatalf("value log %d -> %d bytes, want a third or less", before, after)
	}
	if len(db.gcPins) != 0 {
		t.Fatalf("%d pins held after a collection", len(db.gcPins))
	}
	wantLatest(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openConfig(t, cfg)
	defer db.Close()
	wantLatest(t, db)
	if got := sumSizes(vlogFiles(t, cfg.Dir)); got > before/3 {
		t.Fatalf("value log %d bytes after a reopen, %d before the collection", got, before)
	}
}

// TestCollectGarbageDeletesOnlyOnceDurable: the files a collection
// rewrote are still on disk when the rewrite is done and Badger is not yet
// durable, and gone once a new journal epoch has made it so.
func TestCollectGarbageDeletesOnlyOnceDurable(t *testing.T) {
	db, cfg := garbageStore(t, Config{Dir: t.TempDir(), Logger: testLogger(t), MinFree: -1})
	before := vlogFiles(t, cfg.Dir)
	epochs := func() int {
		db.j.mu.Lock()
		defer db.j.mu.Unlock()
		return db.j.started
	}
	var atHook map[string]int64
	epochsAtHook := -1
	db.gcHook = func() {
		atHook = vlogFiles(t, cfg.Dir)
		epochsAtHook = epochs()
	}
	n, err := db.CollectGarbage(100)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || atHook == nil {
		t.Fatalf("%d files rewritten, hook called: %v", n, atHook != nil)
	}
	after := vlogFiles(t, cfg.Dir)
	var gone []string
	for name := range before {
		if _, ok := after[name]; !ok {
			gone = append(gone, name)
		}
		if _, ok := atHook[name]; !ok {
			t.Errorf("%s was deleted before Badger was made durable", name)
		}
	}
	if len(gone) == 0 {
		t.Fatal("no value-log file deleted")
	}
	sort.Strings(gone)
	t.Logf("%d rewritten, deleted after the epoch: %v", n, gone)
	if got := epochs(); got <= epochsAtHook {
		t.Fatalf("no new epoch after the rewrite (%d, %d at the hook)", got, epochsAtHook)
	}
	wantLatest(t, db)
}

// TestCollectGarbageNoOp: a fresh store has nothing to collect, a store
// refusing writes collects nothing, and a closed store says so.
func TestCollectGarbageNoOp(t *testing.T) {
	fresh := openDB(t, t.TempDir())
	if n, err := fresh.CollectGarbage(10); n != 0 || err != nil {
		t.Fatalf("fresh store: %d rewritten, %v", n, err)
	}
	if err := fresh.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := fresh.CollectGarbage(10); n != 0 || !errors.Is(err, ErrClosed) {
		t.Fatalf("closed store: %d rewritten, %v", n, err)
	}

	disk := &fakeDisk{dir: t.TempDir()}
	disk.avail.Store(1 << 30)
	db, cfg := garbageStore(t, Config{Dir: disk.dir, Logger: testLogger(t), MinFree: 64 * mib, freeSpace: disk.free})
	disk.avail.Store(10*mib + 16*mib) // below the floor
	if db.Problem() == nil {
		t.Fatal("the store takes writes below the floor")
	}
	before := vlogFiles(t, cfg.Dir)
	db.gcHook = func() { t.Error("a store refusing writes rewrote the value log") }
	if n, err := db.CollectGarbage(10); n != 0 || err != nil {
		t.Fatalf("store refusing writes: %d rewritten, %v", n, err)
	}
	if after := vlogFiles(t, cfg.Dir); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("value log changed while refusing writes: %v -> %v", before, after)
	}
	// The refusal was the reason.
	db.gcHook = nil
	disk.avail.Store(1 << 30)
	if n, err := db.CollectGarbage(10); n == 0 || err != nil {
		t.Fatalf("once writes are taken again: %d rewritten, %v", n, err)
	}
	wantLatest(t, db)
}

// TestCollectGarbageKeepsFilesWhenNotDurable: when Badger cannot be made
// durable after the rewrite (here the store fails meanwhile), the files
// rewritten stay on disk, through Close, and the reopened store reads
// every key.
func TestCollectGarbageKeepsFilesWhenNotDurable(t *testing.T) {
	db, cfg := garbageStore(t, Config{Dir: t.TempDir(), Logger: testLogger(t), MinFree: -1})
	before := vlogFiles(t, cfg.Dir)
	db.gcHook = func() {
		db.j.failMu.Lock()
		db.j.failed = errors.New("the test's I/O error")
		db.j.failMu.Unlock()
	}
	n, err := db.CollectGarbage(100)
	if n == 0 || err == nil {
		t.Fatalf("%d rewritten, %v; want files rewritten and an error", n, err)
	}
	if len(db.gcPins) != 1 {
		t.Fatalf("%d pins held, want 1", len(db.gcPins))
	}
	kept := func(when string) {
		t.Helper()
		now := vlogFiles(t, cfg.Dir)
		for name := range before {
			if _, ok := now[name]; !ok {
				t.Errorf("%s: %s deleted although Badger was not made durable", when, name)
			}
		}
	}
	kept("after the collection")
	if err := db.Close(); err == nil {
		t.Fatal("Close of a failed store returned no error")
	}
	kept("after Close")
	db = openConfig(t, cfg)
	defer db.Close()
	wantLatest(t, db)
}
