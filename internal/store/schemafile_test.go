package store

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A database folder names its key schema in parley.schema: a new one gets
// the file, a folder made before it (no file) opens as schema 1 and gets it,
// a folder of schema 1 opens and is recorded as schema 2, and a folder of a newer schema or with a garbled file is refused before
// Badger opens it, with nothing in it changed.
func TestOpenChecksTheSchemaFile(t *testing.T) {
	dir := t.TempDir()
	fillDB(t, dir, 30)
	path := filepath.Join(dir, SchemaName)
	if b, err := os.ReadFile(path); err != nil || string(b) != "parley schema 2\n" {
		t.Fatalf("a new database's schema file: %q, %v", b, err)
	}

	// A folder made before the file opens, keeps its keys and gets it.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, testLogger(t))
	if err != nil {
		t.Fatalf("a folder without its schema file: %v", err)
	}
	if v, err := db.Get(key(7)); err != nil || string(v) != string(value(7)) {
		t.Fatalf("key 7 after the reopen: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "parley schema 2\n" {
		t.Fatalf("the schema file was not written back: %q, %v", b, err)
	}

	// A folder of schema 1 (every value whole) opens, keeps its keys and is
	// recorded as schema 2.
	if err := os.WriteFile(path, []byte("parley schema 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, testLogger(t))
	if err != nil {
		t.Fatalf("a folder of schema 1: %v", err)
	}
	if v, err := db.Get(key(7)); err != nil || string(v) != string(value(7)) {
		t.Fatalf("key 7 in a folder of schema 1: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "parley schema 2\n" {
		t.Fatalf("a folder of schema 1 after an open: %q, %v", b, err)
	}

	for _, tc := range []struct {
		text string
		is   error
		want string
	}{
		{"parley schema 3\n", ErrNewerSchema, "schema 3, and this Parley reads schema 2"},
		{"parley schema 10", ErrNewerSchema, "schema 10"},
		{"parley schema two\n", ErrCorrupt, "does not name a schema"},
		{"", ErrCorrupt, "does not name a schema"},
		{"parley schema 0\n", ErrCorrupt, "does not name a schema"},
	} {
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		before := sizes(t, dir)
		mtimes := modTimes(t, dir)
		_, err := Open(dir, testLogger(t))
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("schema file %q: got %v, want %v naming %q", tc.text, err, tc.is, tc.want)
		}
		if after := sizes(t, dir); !maps.Equal(before, after) {
			t.Fatalf("schema file %q: the refused open changed the folder:\nbefore %v\nafter  %v", tc.text, before, after)
		}
		if after := modTimes(t, dir); !maps.Equal(mtimes, after) {
			t.Fatalf("schema file %q: the refused open wrote to the folder", tc.text)
		}
	}
}
