package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A claim without --note names the flag that gives it, before it asks the
// node anything: with no node running the note is still what is missing.
func TestCLIClaimWithoutNoteNamesTheNoteFlag(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	_, errs, code := run(t, "--home", home, "claim", "a.go", "--project", "k")
	if code == 0 || !strings.Contains(errs, "--note TEXT") || strings.Contains(errs, "no node is running") {
		t.Fatalf("claim without a note: exit %d %s", code, errs)
	}
}
