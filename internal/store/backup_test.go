package store

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// A backup restores into a new folder with every key, for its own node
// only, into an empty folder only, and without the copy's journal epoch.
func TestBackupRestores(t *testing.T) {
	src := t.TempDir()
	db, err := Open(src, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ops := []schema.Op{{Key: schema.KeyNode(), Val: []byte("node-a")}}
	for i := range 50 {
		ops = append(ops, schema.Op{Key: key(i), Val: value(i)})
	}
	if err := db.Apply(ops, true); err != nil {
		t.Fatal(err)
	}
	var copy bytes.Buffer
	if err := db.Backup(&copy); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if err := Restore(t.TempDir(), bytes.NewReader(copy.Bytes()), []byte("node-b")); err == nil || !strings.Contains(err.Error(), "another node's") {
		t.Fatalf("a copy restored for another node: %v", err)
	}
	if err := Restore(src, bytes.NewReader(copy.Bytes()), []byte("node-a")); err == nil || !strings.Contains(err.Error(), "already holds a database") {
		t.Fatalf("a copy restored over a database: %v", err)
	}
	if err := Restore(t.TempDir(), bytes.NewReader(copy.Bytes()[:copy.Len()/2]), []byte("node-a")); err == nil {
		t.Fatal("a copy cut in half restored")
	}

	dst := t.TempDir()
	if err := Restore(dst, bytes.NewReader(copy.Bytes()), []byte("node-a")); err != nil {
		t.Fatal(err)
	}
	got, err := Open(dst, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	for i := range 50 {
		if v, err := got.Get(key(i)); err != nil || !bytes.Equal(v, value(i)) {
			t.Fatalf("key %d after the restore: %v", i, err)
		}
	}
	if n, err := readSchema(dst); err != nil || n != schema.Version {
		t.Fatalf("the restored folder's schema: %d, %v", n, err)
	}
}

// A backup stream is refused, never half taken, when it is cut anywhere,
// has bytes after its end, keys out of order or a count that is not its own.
func TestRestoreRefusesABrokenStream(t *testing.T) {
	src := t.TempDir()
	db, err := Open(src, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ops := []schema.Op{{Key: schema.KeyNode(), Val: []byte("node-a")}, {Key: []byte("a"), Val: []byte("1")}, {Key: []byte("b"), Val: nil}}
	if err := db.Apply(ops, false); err != nil {
		t.Fatal(err)
	}
	var copy bytes.Buffer
	if err := db.Backup(&copy); err != nil {
		t.Fatal(err)
	}
	db.Close()
	whole := copy.Bytes()
	noop := func(k, v []byte) error { return nil }
	if owner, err := readBackup(bytes.NewReader(whole), noop); err != nil || string(owner) != "node-a" {
		t.Fatalf("the whole stream: %q, %v", owner, err)
	}
	for i := range len(whole) {
		if _, err := readBackup(bytes.NewReader(whole[:i]), noop); !errors.Is(err, ErrBadBackupStream) {
			t.Fatalf("the stream cut at byte %d of %d: %v", i, len(whole), err)
		}
	}
	if _, err := readBackup(bytes.NewReader(append(bytes.Clone(whole), 0)), noop); err == nil || !strings.Contains(err.Error(), "bytes follow its end") {
		t.Fatalf("a byte after the end: %v", err)
	}
	swapped := []byte(backupMagic + "\x01b\x00\x01a\x00\x00\x02")
	if _, err := readBackup(bytes.NewReader(swapped), noop); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("keys out of order: %v", err)
	}
	miscounted := []byte(backupMagic + "\x01a\x00\x00\x02")
	if _, err := readBackup(bytes.NewReader(miscounted), noop); err == nil || !strings.Contains(err.Error(), "holds 1") {
		t.Fatalf("a count that is not its own: %v", err)
	}
}

// FuzzReadBackup: no stream makes the reader panic or take a key it then
// refuses without an error.
func FuzzReadBackup(f *testing.F) {
	f.Add([]byte(backupMagic + "\x06m/node\x06node-a\x01a\x011\x00\x02"))
	f.Add([]byte(backupMagic))
	f.Add([]byte("PARLEYKV1\n\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var prev []byte
		_, err := readBackup(bytes.NewReader(b), func(k, v []byte) error {
			if len(k) == 0 || (prev != nil && bytes.Compare(prev, k) >= 0) {
				t.Fatalf("took key %q after %q", k, prev)
			}
			prev = k
			return nil
		})
		_ = err
	})
}
