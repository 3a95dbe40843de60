package store

import (
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/parley-mesh/parley/internal/store/schema"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func TestApplyLookupScanAndReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var ops []schema.Op
	for i := range 1000 {
		ops = append(ops, schema.Op{Key: []byte(fmt.Sprintf("k/%04d", i)), Val: []byte(fmt.Sprint(i))})
	}
	if err := db.Apply(ops, true); err != nil {
		t.Fatal(err)
	}
	if err := db.Apply([]schema.Op{{Key: []byte("k/0001"), Delete: true}}, false); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.Lookup([]byte("k/0001")); ok || err != nil {
		t.Fatalf("deleted key: ok=%v err=%v", ok, err)
	}
	v, ok, err := db.Lookup([]byte("k/0002"))
	if !ok || err != nil || string(v) != "2" {
		t.Fatalf("lookup = %q %v %v", v, ok, err)
	}
	var last []string
	if err := db.ScanFrom([]byte("k/"), nil, true, func(k, _ []byte) bool {
		last = append(last, string(k))
		return len(last) < 3
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(last) != "[k/0999 k/0998 k/0997]" {
		t.Fatalf("reverse scan = %v", last)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	if err := db.Scan([]byte("k/"), func(_, _ []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != 999 {
		t.Fatalf("after reopen: %d keys, want 999", n)
	}
}

func TestManyWritesThenClose(t *testing.T) {
	db, err := Open(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 1100)
	for i := range 20000 {
		if err := db.Apply([]schema.Op{{Key: []byte(fmt.Sprintf("e/%08d", i)), Val: val}}, i%100 == 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestApplyTakesARoomBatch writes the largest transaction a room writes:
// events whose values stay in the table (just under ValueThreshold), each
// with its index keys, until they pass the room's chunk (rooms.writeChunk,
// 320 KiB counting 32 bytes an op), and one more event: the memtable size
// bounds Badger's transactions.
func TestApplyTakesARoomBatch(t *testing.T) {
	db, err := Open(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const roomChunk, opCost = 320 << 10, 32
	body := make([]byte, ValueThreshold-1)
	id := make([]byte, 32)
	var ops []schema.Op
	size, events := 0, 0
	for i := 0; size < roomChunk+1; i++ { // the event that passes the chunk is the one more
		room := "r/0123456789abcdefghijklmnopqrstuv/"
		ev := []schema.Op{
			{Key: fmt.Appendf(nil, "%se/%032d", room, i), Val: body},
			{Key: fmt.Appendf(nil, "%so/%08d%032d", room, i, i)},
			{Key: fmt.Appendf(nil, "%sh/%032d", room, i), Val: id[:8]},
			{Key: fmt.Appendf(nil, "%sa/12D3KooWabcdefghijklmnopqrstuvwxyz0123456789ABCDEF/%08d", room, i), Val: id},
			{Key: fmt.Appendf(nil, "%sv/12D3KooWabcdefghijklmnopqrstuvwxyz0123456789ABCDEF", room), Val: id[:8]},
			{Key: fmt.Appendf(nil, "%sn/%08d", room, i), Val: id},
			{Key: fmt.Appendf(nil, "%sh/%032d", room, i+1000), Delete: true},
		}
		for _, op := range ev {
			size += len(op.Key) + len(op.Val) + opCost
		}
		ops = append(ops, ev...)
		events++
	}
	if err := db.Apply(ops, true); err != nil {
		t.Fatalf("a batch of %d events (%d keys, %d bytes): %v", events, len(ops), size, err)
	}
}

func TestMemTableSize(t *testing.T) {
	for _, c := range []struct{ set, want int64 }{{0, DefaultMemTableSize}, {6 << 20, 6 << 20}} {
		db, err := OpenConfig(Config{Dir: t.TempDir(), MinFree: -1, MemTableSize: c.set})
		if err != nil {
			t.Fatal(err)
		}
		if got := db.bdb.Opts().MemTableSize; got != c.want {
			t.Errorf("MemTableSize %d: Badger's is %d, want %d", c.set, got, c.want)
		}
		db.Close()
	}
}
