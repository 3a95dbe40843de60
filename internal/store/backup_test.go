package store

import (
	"bytes"
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
