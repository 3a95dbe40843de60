package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// fillDB writes n keys, a third of them with values big enough for the
// value log, and closes the database, which leaves tables on disk.
func fillDB(t *testing.T, dir string, n int) {
	t.Helper()
	db, err := Open(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := db.Apply([]schema.Op{{Key: key(i), Val: value(i)}}, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func key(i int) []byte { return []byte(fmt.Sprintf("k/%05d", i)) }

func value(i int) []byte {
	v := make([]byte, 200+(i%3)*1000)
	for j := range v {
		v[j] = byte('a' + (i+j)%26)
	}
	return v
}

func glob(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sizes maps each file of dir to its size.
func sizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	return eachFile(t, dir, fs.FileInfo.Size)
}

// modTimes maps each file of dir to its modification time.
func modTimes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	return eachFile(t, dir, func(fi fs.FileInfo) int64 { return fi.ModTime().UnixNano() })
}

// eachFile maps each file of dir to what of fn its info gives.
func eachFile(t *testing.T, dir string, fn func(fs.FileInfo) int64) map[string]int64 {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int64)
	for _, e := range es {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fn(fi)
	}
	return out
}

func flip(t *testing.T, path string, off, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off+n > len(b) {
		t.Fatalf("%s has %d bytes", path, len(b))
	}
	for i := off; i < off+n; i++ {
		b[i] ^= 0x55
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A damaged database is refused at open with one line wrapping ErrCorrupt,
// and nothing in its folder is changed (Badger would otherwise start empty
// and delete the tables, or panic in one of its goroutines).
func TestOpenRefusesDamagedDatabase(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"manifest deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "MANIFEST")); err != nil {
				t.Fatal(err)
			}
		}, "MANIFEST is missing"},
		{"manifest cut to 8 bytes", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, "MANIFEST"), 8); err != nil {
				t.Fatal(err)
			}
		}, "lists no tables"},
		{"manifest cut to 3 bytes", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, "MANIFEST"), 3); err != nil {
				t.Fatal(err)
			}
		}, "cannot be read"},
		{"table cut in half", func(t *testing.T, dir string) {
			sst := glob(t, dir, "*.sst")[0]
			st, err := os.Stat(sst)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(sst, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, ".sst"},
		{"table bytes flipped", func(t *testing.T, dir string) {
			sst := glob(t, dir, "*.sst")[0]
			flip(t, sst, 5000, 64)
		}, ".sst"},
		{"table deleted", func(t *testing.T, dir string) {
			if err := os.Remove(glob(t, dir, "*.sst")[0]); err != nil {
				t.Fatal(err)
			}
		}, "is missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fillDB(t, dir, 3000)
			if len(glob(t, dir, "*.sst")) == 0 {
				t.Fatal("no table on disk after close")
			}
			tc.damage(t, dir)
			before := sizes(t, dir)
			db, err := Open(dir, testLogger(t))
			if err == nil {
				db.Close()
				t.Fatal("a damaged database opened")
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Fatalf("error is not one line naming %q: %q", tc.want, msg)
			}
			after := sizes(t, dir)
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Fatalf("the folder changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// Tables left behind by an interrupted compaction (not listed in a
// MANIFEST that lists others) are Badger's to remove: the database opens.
func TestOpenAcceptsLeftoverTable(t *testing.T) {
	dir := t.TempDir()
	fillDB(t, dir, 3000)
	ssts := glob(t, dir, "*.sst")
	raw, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "000099.sst"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, ok, err := db.Lookup(key(7)); !ok || err != nil {
		t.Fatalf("lookup after open: %v %v", ok, err)
	}
}

// A value changed in a value log reads as ErrCorrupt, never as other data
// or as an empty value.
func TestCorruptValueReadsAsCorrupt(t *testing.T) {
	dir := t.TempDir()
	fillDB(t, dir, 3000)
	// Open and close once more, so the log holding the values is not the
	// newest one (Badger cuts the newest log at its first bad entry when
	// it opens, as after a torn write).
	db, err := Open(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	logs := glob(t, dir, "*.vlog")
	if len(logs) < 2 {
		t.Fatalf("value logs: %v", logs)
	}
	// Change bytes inside a value near the start of the first log.
	raw, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	v1 := value(1)
	off := strings.Index(string(raw), string(v1[:100]))
	if off < 0 {
		t.Fatal("value 1 not found in the first value log")
	}
	flip(t, logs[0], off+500, 1)

	db, err = Open(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Get(key(1)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("get of a damaged value: %v", err)
	}
	if v, err := db.Get(key(2)); err != nil || string(v) != string(value(2)) {
		t.Fatalf("get of a sound value: %d bytes, %v", len(v), err)
	}
	err = db.Scan([]byte("k/"), func(_, _ []byte) bool { return true })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("scan over a damaged value: %v", err)
	}
}
