package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// fakeDisk models a disk with avail bytes free before the reserve file
// takes its share.
type fakeDisk struct {
	dir   string
	avail atomic.Int64
}

func (d *fakeDisk) free(string) (int64, error) {
	v := d.avail.Load()
	if st, err := os.Stat(filepath.Join(d.dir, ReserveName)); err == nil {
		v -= st.Size()
	}
	return v, nil
}

func (d *fakeDisk) reserve(t *testing.T) int64 {
	t.Helper()
	st, err := os.Stat(filepath.Join(d.dir, ReserveName))
	if err != nil {
		return 0
	}
	return st.Size()
}

const mib = 1 << 20

// Below the floor writes fail with ErrDiskFull and write nothing, reads go
// on; once space returns, writes are taken again. The reserve is kept for
// the flush at Close, and given to Badger there if the disk is short.
func TestFloorRefusesWritesAndKeepsReads(t *testing.T) {
	disk := &fakeDisk{dir: t.TempDir()}
	disk.avail.Store(1 << 30)
	db, err := OpenConfig(Config{Dir: disk.dir, Logger: testLogger(t), MinFree: 64 * mib, freeSpace: disk.free})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	put := func(k string) error {
		return db.Apply([]schema.Op{{Key: []byte(k), Val: []byte("v")}}, true)
	}
	if err := put("a"); err != nil {
		t.Fatal(err)
	}
	if got := disk.reserve(t); got != ReserveSize(64*mib) || got != 16*mib {
		t.Fatalf("reserve is %d bytes, want 16 MiB", got)
	}

	// Another program fills the disk down to 10 MiB.
	disk.avail.Store(10*mib + 16*mib)
	err = put("b")
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("write below the floor: %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "64 MiB") || !strings.Contains(msg, "free some space") {
		t.Fatalf("error does not say what to do in one line: %q", msg)
	}
	if !db.Full() {
		t.Fatal("Full is false below the floor")
	}
	if err := db.Problem(); !errors.Is(err, ErrDiskFull) || refusing(t, db) != 1 {
		t.Fatalf("below the floor the store's problem is %v and its gauge %v", err, refusing(t, db))
	}
	if got := disk.reserve(t); got != 16*mib {
		t.Fatalf("reserve holds %d bytes below the floor, want it kept", got)
	}
	if _, ok, err := db.Lookup([]byte("b")); ok || err != nil {
		t.Fatalf("the refused write is there: %v %v", ok, err)
	}
	if v, ok, err := db.Lookup([]byte("a")); !ok || err != nil || string(v) != "v" {
		t.Fatalf("read below the floor: %q %v %v", v, ok, err)
	}
	// Space counts without the reserve.
	disk.avail.Store(64*mib + 8*mib)
	if err := put("c"); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("write with the floor met only by counting the reserve: %v", err)
	}
	disk.avail.Store(200 * mib)
	if err := put("d"); err != nil {
		t.Fatalf("write once space is back: %v", err)
	}
	if db.Full() || disk.reserve(t) != 16*mib {
		t.Fatalf("after space returned: full=%v reserve=%d", db.Full(), disk.reserve(t))
	}
	if err := db.Problem(); err != nil || refusing(t, db) != 0 {
		t.Fatalf("after space returned the store's problem is %v and its gauge %v", err, refusing(t, db))
	}

	// Another program takes nearly everything: Close gives the reserve to
	// Badger for its flush.
	disk.avail.Store(16*mib + 100)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if disk.reserve(t) != 0 {
		t.Fatal("reserve kept at Close on a full disk")
	}
}

// Writes are taken only with the reserve in place and the floor above it:
// a reserve given to Badger at Close is made again before writes resume.
func TestFloorMakesReserveBeforeWritesResume(t *testing.T) {
	disk := &fakeDisk{dir: t.TempDir()}
	disk.avail.Store(10 * mib)
	db, err := OpenConfig(Config{Dir: disk.dir, Logger: testLogger(t), MinFree: 8 * mib, freeSpace: disk.free})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	put := func() error { return db.Set([]byte("k"), []byte("v")) }
	if err := put(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("write above the floor with no room for the reserve: %v", err)
	}
	if disk.reserve(t) != 0 {
		t.Fatal("a reserve was made that takes the disk below the floor")
	}
	disk.avail.Store(20 * mib)
	if err := put(); err != nil {
		t.Fatalf("write once floor and reserve fit: %v", err)
	}
	if disk.reserve(t) != 8*mib {
		t.Fatalf("reserve %d, want 8 MiB", disk.reserve(t))
	}
	disk.avail.Store(7*mib + 8*mib)
	if err := put(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("write below the floor: %v", err)
	}
	disk.avail.Store(30 * mib)
	if err := put(); err != nil || db.Full() {
		t.Fatalf("write once space is back: %v (full %v)", err, db.Full())
	}
}

// A node started while the disk is full opens for reading (its reserve
// given to Badger for the replay) and refuses writes.
func TestOpenBelowFloor(t *testing.T) {
	disk := &fakeDisk{dir: t.TempDir()}
	disk.avail.Store(1 << 30)
	db, err := OpenConfig(Config{Dir: disk.dir, Logger: testLogger(t), MinFree: 8 * mib, freeSpace: disk.free})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Apply([]schema.Op{{Key: []byte("a"), Val: []byte("v")}}, true); err != nil {
		t.Fatal(err)
	}
	if got := disk.reserve(t); got != 8*mib {
		t.Fatalf("reserve for an 8 MiB floor: %d bytes, want 8 MiB", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	disk.avail.Store(1 * mib)
	db, err = OpenConfig(Config{Dir: disk.dir, Logger: testLogger(t), MinFree: 8 * mib, freeSpace: disk.free})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if disk.reserve(t) != 0 {
		t.Fatal("the reserve was kept while opening below the floor")
	}
	if v, err := db.Get([]byte("a")); err != nil || string(v) != "v" {
		t.Fatalf("read: %q %v", v, err)
	}
	if err := db.Set([]byte("b"), []byte("v")); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("write: %v", err)
	}
	if err := db.Delete([]byte("a")); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("delete: %v", err)
	}
}

// With the floor off there is no reserve and no check.
func TestFloorOff(t *testing.T) {
	disk := &fakeDisk{dir: t.TempDir()}
	disk.avail.Store(0)
	db, err := OpenConfig(Config{Dir: disk.dir, Logger: testLogger(t), MinFree: -1, freeSpace: disk.free})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("a"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if disk.reserve(t) != 0 {
		t.Fatal("reserve made with the floor off")
	}
}

// Far above the floor, one reading of the free space serves the writes of
// the next freeReuse, less what they write; near the floor every write
// reads it again.
func TestFreeSpaceReadingReused(t *testing.T) {
	disk := &fakeDisk{dir: t.TempDir()}
	disk.avail.Store(1 << 30)
	var reads atomic.Int64
	counted := func(dir string) (int64, error) {
		reads.Add(1)
		return disk.free(dir)
	}
	s := newSpace(disk.dir, 64*mib, counted, testLogger(t))
	s.reuse = time.Hour
	s.open()
	if err := s.check(1 << 10); err != nil {
		t.Fatal(err)
	}
	base := reads.Load()
	for range 100 {
		if err := s.check(1 << 10); err != nil {
			t.Fatal(err)
		}
	}
	if got := reads.Load() - base; got != 0 {
		t.Fatalf("%d readings for 100 small writes far above the floor, want 0", got)
	}
	// Writes that bring the estimate within a floor of the floor read
	// again, and the disk filled meanwhile refuses them.
	disk.avail.Store(10*mib + 16*mib)
	if err := s.check(500 * mib); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a big write near the floor: %v", err)
	}
	if reads.Load() == base {
		t.Fatal("a write near the floor did not read the free space")
	}
	if err := s.check(1 << 10); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a small write after the disk filled: %v", err)
	}
}

// refusing reads the database's parley_store_refusing_writes gauge.
func refusing(t *testing.T, db *DB) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	for _, c := range db.Collectors() {
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "parley_store_refusing_writes" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no parley_store_refusing_writes gauge")
	return 0
}
