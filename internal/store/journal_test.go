package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// A power loss keeps what was flushed: the database as of its last sync
// and the journal as of its last fdatasync. powerLoss models it: snapshot
// copies the database folder (without the journal) while nothing writes,
// after a sync of Badger itself, and crash later puts the journal as it is
// then beside that copy. The database's own writes after the snapshot are
// lost, as an unflushed page cache would lose them.
type powerLoss struct {
	t    *testing.T
	db   *DB
	snap string
}

func snapshot(t *testing.T, db *DB) *powerLoss {
	t.Helper()
	if err := db.bdb.Sync(); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(t.TempDir(), "db")
	copyFolder(t, db.dir, snap, JournalName, "LOCK")
	return &powerLoss{t: t, db: db, snap: snap}
}

// crash puts a copy of the journal as it is now beside the snapshot,
// passing it through damage first if not nil, and closes the database.
func (p *powerLoss) crash(damage func([]byte) []byte) string {
	p.t.Helper()
	data, err := os.ReadFile(filepath.Join(p.db.dir, JournalName))
	if err != nil {
		p.t.Fatal(err)
	}
	if damage != nil {
		data = damage(data)
	}
	if err := os.WriteFile(filepath.Join(p.snap, JournalName), data, 0o600); err != nil {
		p.t.Fatal(err)
	}
	if err := p.db.Close(); err != nil {
		p.t.Fatal(err)
	}
	return p.snap
}

func copyFolder(t *testing.T, from, to string, skip ...string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
next:
	for _, e := range entries {
		for _, s := range skip {
			if e.Name() == s {
				continue next
			}
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func openDB(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := OpenConfig(Config{Dir: dir, MinFree: -1})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// openSmall opens the database in dir with a journal of max bytes.
func openSmall(t *testing.T, dir string, max int64) *DB {
	t.Helper()
	db, err := OpenConfig(Config{Dir: dir, MinFree: -1, journalMax: max})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func set(k, v string) schema.Op { return schema.Op{Key: []byte(k), Val: []byte(v)} }
func del(k string) schema.Op    { return schema.Op{Key: []byte(k), Delete: true} }

func apply(t *testing.T, db *DB, ops ...schema.Op) {
	t.Helper()
	if err := db.Apply(ops, false); err != nil {
		t.Fatal(err)
	}
}

// want checks k's value in db; "" means absent.
func want(t *testing.T, db *DB, k, v string) {
	t.Helper()
	got, ok, err := db.Lookup([]byte(k))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case v == "" && ok:
		t.Errorf("%s = %.20q…, want none", k, got)
	case v != "" && !ok:
		t.Errorf("%s missing, want %.20q…", k, v)
	case v != "" && string(got) != v:
		t.Errorf("%s = %.20q…, want %.20q…", k, got, v)
	}
}

// TestJournalReplaysAfterPowerLoss: writes made durable by Sync, which
// flushes the journal only, are back after a power loss took every write
// Badger had not synced; a copy without the journal shows they were
// gone.
func TestJournalReplaysAfterPowerLoss(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "db"))
	apply(t, db, set("a", "1"), set("k", "old"))
	pl := snapshot(t, db)
	big := string(bytes.Repeat([]byte("v"), 3000)) // into the value log
	apply(t, db, set("k", "new"), del("a"))
	apply(t, db, set("b", big))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	control := filepath.Join(t.TempDir(), "db")
	copyFolder(t, pl.snap, control)
	dir := pl.crash(nil)

	without := openDB(t, control)
	want(t, without, "k", "old")
	want(t, without, "b", "")
	without.Close()

	for range 2 { // and the replay is not done twice
		db = openDB(t, dir)
		want(t, db, "k", "new")
		want(t, db, "a", "")
		want(t, db, "b", big)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJournalOfAnOldCopyNotReplayed: a journal restored from an older copy
// would write back values overwritten since; its epoch is not the
// database's, so it is left alone.
func TestJournalOfAnOldCopyNotReplayed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db := openDB(t, dir)
	apply(t, db, set("k", "v1"))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(filepath.Join(dir, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openDB(t, dir)
	apply(t, db, set("k", "v2"))
	db.Close()
	if err := os.WriteFile(filepath.Join(dir, JournalName), old, 0o600); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir)
	defer db.Close()
	want(t, db, "k", "v2")
}

// recordAt returns the offset of record n (1-based) in a journal file.
func recordAt(t *testing.T, data []byte, n int) int {
	t.Helper()
	off := journalHeaderLen
	for i := 1; i < n; i++ {
		if data[off] != recordMark {
			t.Fatalf("no record %d", i)
		}
		off += recordHeaderLen + int(binary.BigEndian.Uint32(data[off+1:]))
	}
	if data[off] != recordMark {
		t.Fatalf("no record %d", n)
	}
	return off
}

// recordPayload returns the payload of record n (1-based) in a journal
// file, within the file's bytes.
func recordPayload(t *testing.T, data []byte, n int) []byte {
	t.Helper()
	at := recordAt(t, data, n)
	return data[at+recordHeaderLen : at+recordHeaderLen+int(binary.BigEndian.Uint32(data[at+1:]))]
}

// TestJournalTornRecordEndsReplay: a record the crash cut short (here,
// its value's byte changed: it still decodes, and only its CRC tells) and
// every record after it are not replayed; the ones before it are. Whole
// records after it mean the damage is in the middle, not a crash's cut
// tail: writes Sync acknowledged are dropped, and the replay says so as
// an error (before, it said nothing).
func TestJournalTornRecordEndsReplay(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "db"))
	pl := snapshot(t, db)
	apply(t, db, set("k1", "1"))
	apply(t, db, set("k2", "2"))
	apply(t, db, set("k3", "3"))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	dir := pl.crash(func(b []byte) []byte {
		payload := recordPayload(t, b, 2)
		payload[len(payload)-1] = '9' // k2's value
		return b
	})
	var lines logLines
	db, err := OpenConfig(Config{Dir: dir, MinFree: -1, Logger: slog.New(slog.NewTextHandler(&lines, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want(t, db, "k1", "1")
	want(t, db, "k2", "")
	want(t, db, "k3", "")
	if out := lines.String(); !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "journal") {
		t.Fatalf("the replay dropped a whole, acknowledged record after a damaged one and said nothing:\n%s", out)
	}
}

// TestJournalReplaysOverNewerDatabase: a power loss may keep a later
// write in Badger's logs and lose an earlier one's value (the value log
// and a memtable's log lose pages apart). Every whole record is written
// again, whatever Badger holds: here the database kept the third write
// and lost the second's key, and the journal kept the first two,
// acknowledged: they are set again.
func TestJournalReplaysOverNewerDatabase(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "db"))
	apply(t, db, set("k", "1"))
	apply(t, db, set("x", "a"))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	acked, err := os.ReadFile(filepath.Join(db.dir, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, db, set("y", "b"))
	if err := applyOps(db.bdb, []schema.Op{del("x")}); err != nil { // x lost, behind the journal's back
		t.Fatal(err)
	}
	pl := snapshot(t, db)
	db = openDB(t, pl.crash(func([]byte) []byte { return acked }))
	defer db.Close()
	want(t, db, "k", "1")
	want(t, db, "x", "a")
	want(t, db, "y", "b")
}

// TestJournalRefusedWriteNotReplayed: a write with a key Badger would
// refuse never reaches the journal; one Badger refuses once it is there
// (a transaction too big) is taken out again, and the next write goes in
// its place.
func TestJournalRefusedWriteNotReplayed(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "db"))
	pl := snapshot(t, db)
	if err := db.Apply([]schema.Op{set("k", "refused"), {Key: bytes.Repeat([]byte("k"), 70000), Val: []byte("v")}}, false); err == nil {
		t.Fatal("Badger took a 70 KB key")
	}
	many := []schema.Op{set("k", "refused")}
	for i := range 20000 {
		many = append(many, set(fmt.Sprintf("h%05d", i), "v"))
	}
	if err := db.Apply(many, false); !errors.Is(err, badger.ErrTxnTooBig) {
		t.Fatalf("a write of 20,000 keys: %v, want Badger's ErrTxnTooBig", err)
	}
	want(t, db, "k", "")
	apply(t, db, set("k2", "2"))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	dir := pl.crash(func(b []byte) []byte {
		ops, err := decodeOps(recordPayload(t, b, 1))
		if err != nil || len(ops) != 1 || string(ops[0].Key) != "k2" {
			t.Fatalf("the journal's first record holds %d writes (%v), want k2's alone", len(ops), err)
		}
		return b
	})
	db = openDB(t, dir)
	defer db.Close()
	want(t, db, "k", "")
	want(t, db, "h00001", "")
	want(t, db, "k2", "2")
}

// TestJournalNewEpochWhenFull: a full journal starts a new epoch (Badger
// synced first), again and again; every write is there after a restart
// and after a power loss within the last epoch.
func TestJournalNewEpochWhenFull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db := openSmall(t, dir, 16<<10)
	val := func(i int) string { return string(bytes.Repeat([]byte{byte('a' + i%26)}, 1500)) }
	key := func(i int) string { return "k" + string(rune('A'+i/26)) + string(rune('a'+i%26)) }
	for i := range 100 {
		apply(t, db, set(key(i), val(i)))
	}
	if db.j.started < 5 {
		t.Fatalf("%d new epochs for 150 KB through a 16 KiB journal", db.j.started)
	}
	info, err := os.Stat(filepath.Join(dir, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > 16<<10 {
		t.Fatalf("journal file of %d bytes (at most 16 KiB)", info.Size())
	}
	db.j.mu.Lock()
	err = db.j.newEpoch() // room for the writes after the snapshot
	db.j.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	pl := snapshot(t, db)
	epoch := db.j.epoch
	for i := 100; i < 105; i++ {
		apply(t, db, set(key(i), val(i)))
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	if db.j.epoch != epoch {
		t.Fatal("a new epoch began after the snapshot: the model of a power loss does not hold")
	}
	db = openSmall(t, pl.crash(nil), 16<<10)
	defer db.Close()
	for i := range 105 {
		want(t, db, key(i), val(i))
	}
}

// TestJournalTakesAWriteBiggerThanItself: a write too big for the journal
// goes to Badger between two synced epochs.
func TestJournalTakesAWriteBiggerThanItself(t *testing.T) {
	db := openSmall(t, filepath.Join(t.TempDir(), "db"), 8<<10)
	apply(t, db, set("k", "small"))
	big := string(bytes.Repeat([]byte("b"), 20<<10))
	apply(t, db, set("k", "big"), set("b", big))
	pl := snapshot(t, db)
	db = openSmall(t, pl.crash(nil), 8<<10)
	defer db.Close()
	want(t, db, "k", "big")
	want(t, db, "b", big)
}

// TestJournalClosedDatabaseRefusesWrites: after Close, writes and syncs
// fail with ErrClosed.
func TestJournalClosedDatabaseRefusesWrites(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "db"))
	db.Close()
	if err := db.Apply([]schema.Op{set("k", "v")}, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	if err := db.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
}

// FuzzJournalRecords: any bytes read as a journal's records give whole
// records or none, never a panic, and each record's operations encode
// back to operations that read the same.
func FuzzJournalRecords(f *testing.F) {
	var b []byte
	b = appendRecord(b, 7, 1, encodeOps([]schema.Op{set("k", "v"), del("d")}))
	b = appendRecord(b, 7, 2, encodeOps(nil))
	f.Add(b, uint64(7))
	f.Add(b[:len(b)-1], uint64(7))
	f.Add([]byte{recordMark, 0, 0, 0, 200}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, epoch uint64) {
		whole := readRecords(data, epoch)
		wholeRecordAfter(data, epoch, uint64(len(whole))) // reads any bytes
		for _, ops := range whole {
			again, err := decodeOps(encodeOps(ops))
			if err != nil {
				t.Fatalf("re-encoded record does not decode: %v", err)
			}
			if len(again) != len(ops) {
				t.Fatalf("%d ops, then %d", len(ops), len(again))
			}
			for i := range ops {
				if !bytes.Equal(ops[i].Key, again[i].Key) || !bytes.Equal(ops[i].Val, again[i].Val) || ops[i].Delete != again[i].Delete {
					t.Fatalf("op %d changed: %+v, then %+v", i, ops[i], again[i])
				}
			}
		}
	})
}

// TestJournalFailedFlushMakesDatabaseDurable: when the journal's flush
// fails, Sync makes Badger durable instead and a new epoch begins, so a
// hole the failed flush may have left ends no later replay early.
func TestJournalFailedFlushMakesDatabaseDurable(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "db"))
	defer db.Close()
	apply(t, db, set("k", "v"))
	epochs := db.j.started
	db.j.flush = func() error { return errors.New("the test's I/O error") }
	if err := db.Sync(); err != nil {
		t.Fatalf("Sync after a failed flush: %v", err)
	}
	if db.j.started != epochs+1 || db.j.seq != 0 {
		t.Fatalf("epochs %d → %d, seq %d: no new epoch after the failed flush", epochs, db.j.started, db.j.seq)
	}
}

// appendRecord appends record seq of epoch, holding payload, to b.
func appendRecord(b []byte, epoch, seq uint64, payload []byte) []byte {
	rec := append(make([]byte, recordHeaderLen), payload...)
	sealRecord(rec, epoch, seq)
	return append(b, rec...)
}

// encodeOps is ops as a record's payload.
func encodeOps(ops []schema.Op) []byte { return appendOps(nil, ops) }
