package store

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// TestJournalDamagedHeaderStillReplaysItsEpoch: the header is the one
// part of the journal no CRC of a record covers; a byte of it flipped
// (or its sector zeroed) must not drop writes Sync acknowledged, whose
// records each carry Badger's epoch and their own CRC.
func TestJournalDamagedHeaderStillReplaysItsEpoch(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"flipped epoch byte": func(b []byte) []byte { b[15] ^= 0x40; return b },
		"zeroed sector":      func(b []byte) []byte { clear(b[:journalHeaderLen]); return b },
	} {
		t.Run(name, func(t *testing.T) {
			db := openDB(t, filepath.Join(t.TempDir(), "db"))
			pl := snapshot(t, db)
			apply(t, db, set("k1", "1"))
			apply(t, db, set("k2", "2"))
			if err := db.Sync(); err != nil {
				t.Fatal(err)
			}
			db = openDB(t, pl.crash(damage))
			defer db.Close()
			want(t, db, "k1", "1")
			want(t, db, "k2", "2")
		})
	}
}

// logLines is a slog handler's output, safe for Badger's goroutines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestSyncWithoutJournalSyncsEveryLog: a database opened with no room
// for its journal acknowledges a durable write with a sync of Badger
// itself. Badger's DB.Sync covers only the memtable being written: a
// full one waiting to be flushed as a table has its write-ahead log
// unsynced (what a new epoch fsyncs every .mem and .vlog file for), so
// an acknowledged write in it was lost to a power loss. Sync must fsync
// every log there.
func TestSyncWithoutJournalSyncsEveryLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	extendFault = func() error { return syscall.ENOSPC }
	db, err := OpenConfig(Config{Dir: dir, MinFree: -1})
	extendFault = nil
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.j != nil {
		t.Fatal("a journal was made on a full disk")
	}
	var mu sync.Mutex
	synced := map[string]bool{}
	fileSync = func(f *os.File) error {
		mu.Lock()
		synced[filepath.Base(f.Name())] = true
		mu.Unlock()
		return f.Sync()
	}
	defer func() { fileSync = (*os.File).Sync }()
	apply(t, db, set("k", "v"))
	mems := glob(t, dir, "*.mem")
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range mems {
		if _, err := os.Stat(m); err == nil && !synced[filepath.Base(m)] {
			t.Errorf("Sync without a journal left %s unsynced (synced: %v)", filepath.Base(m), synced)
		}
	}
}
