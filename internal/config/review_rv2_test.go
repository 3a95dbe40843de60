package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReviewConfigLeftEmptyByACrashIsTakenSilently: LoadOrCreate writes a
// new home's config in place (writeNew: create, then write, no sync, no
// rename), so a node killed between the two, or a power loss before the
// data reached the disk, leaves an empty HOME/config. Every later start
// takes the empty file as a config without a word: no handle (the node
// then calls itself "anonymous" to its contacts), and the file, which
// exists, is never written again.
func TestReviewConfigLeftEmptyByACrashIsTakenSilently(t *testing.T) {
	home := t.TempDir()
	// What a start killed between writeNew's create and its write leaves.
	if err := os.WriteFile(filepath.Join(home, FileName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadOrCreate(home, "alice")
	if err == nil && f.Handle != "alice" {
		t.Fatalf("a config left empty by a crash is taken as it is: handle %q (want the default %q, or an error saying the file is empty)", f.Handle, "alice")
	}
}
