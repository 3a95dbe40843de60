package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConfigLeftEmptyByACrashIsReplacedByTheDefault: LoadOrCreate used to
// write a new home's config in place (create, then write, no sync, no
// rename), so a node killed between the two, or a power loss before the
// data reached the disk, left an empty HOME/config, which every later start
// took as a config without a word: no handle (the node then called itself
// "anonymous" to its contacts), and the file was never written again. The
// default file is now written to a temporary file, synced and linked into
// place; a file holding only white space is taken as none and replaced by
// the default, while a file with anything else in it is left as it is.
func TestConfigLeftEmptyByACrashIsReplacedByTheDefault(t *testing.T) {
	for _, left := range []string{"", " \n\t\n"} {
		home := t.TempDir()
		path := filepath.Join(home, FileName)
		if err := os.WriteFile(path, []byte(left), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := LoadOrCreate(home, "alice")
		if err != nil || f.Handle != "alice" {
			t.Fatalf("a config left %q by a crash: handle %q, %v (want the default %q)", left, f.Handle, err, "alice")
		}
		raw, err := os.ReadFile(path)
		if err != nil || string(raw) != Default("alice") {
			t.Fatalf("the file left %q is not replaced by the default: %q %v", left, raw, err)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("mode: %v %v", st.Mode(), err)
		}
		if f, err := LoadOrCreate(home, "bob"); err != nil || f.Handle != "alice" {
			t.Fatalf("the next start: handle %q, %v", f.Handle, err)
		}
	}
}

// TestConfigCreatedWholeAndUsersFileKept: a fresh home gets the default file
// with no temporary file left beside it, and a file with only comments in it
// is the user's: it is read as it is, never rewritten.
func TestConfigCreatedWholeAndUsersFileKept(t *testing.T) {
	home := t.TempDir()
	if f, err := LoadOrCreate(home, "alice"); err != nil || f.Handle != "alice" {
		t.Fatalf("a fresh home: %q %v", f.Handle, err)
	}
	es, err := os.ReadDir(home)
	if err != nil || len(es) != 1 || es[0].Name() != FileName {
		t.Fatalf("the home holds %v (%v), want the config alone", es, err)
	}
	mine := "# nothing but my notes\n"
	path := filepath.Join(home, FileName)
	if err := os.WriteFile(path, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := LoadOrCreate(home, "bob"); err != nil || f.Handle != "" {
		t.Fatalf("a file of comments: %q %v", f.Handle, err)
	}
	if raw, err := os.ReadFile(path); err != nil || string(raw) != mine {
		t.Fatalf("the user's file was rewritten: %q %v", raw, err)
	}
}
