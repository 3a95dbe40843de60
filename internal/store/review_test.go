package store

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
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

// TestJournalDamagedRecordBeforeWholeOnesIsReported: a record that fails
// its CRC ends the replay, which is right for the record a crash cut
// short. But whole records of the epoch after it mean the damage is in
// the middle: writes Sync acknowledged are dropped, and the operator
// must be told, not left with a node that quietly lost them.
func TestJournalDamagedRecordBeforeWholeOnesIsReported(t *testing.T) {
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
		payload[len(payload)-1] = '9'
		return b
	})
	var lines logLines
	db, err := OpenConfig(Config{Dir: dir, MinFree: -1, Logger: slog.New(slog.NewTextHandler(&lines, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want(t, db, "k1", "1")
	if out := lines.String(); !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "journal") {
		t.Fatalf("the replay dropped a whole, acknowledged record after a damaged one and said nothing:\n%s", out)
	}
}
