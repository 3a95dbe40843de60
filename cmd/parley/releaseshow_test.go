package main

import (
	"strings"
	"testing"
)

// TestCLIReleaseShowsPathsSafely: parley release prints the paths it
// released as every other board line does, their invisible characters
// escaped: a path may hold a bidi override (no control character, so a
// claim takes it), which reordered the rest of the terminal's line.
// Before, the paths were printed as they were.
func TestCLIReleaseShowsPathsSafely(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := t.TempDir() + "/h"
	up(t, home, "--listen", loopback)
	const path = "src/\u202eog.a"
	if _, errs, code := runIn(t, repo, "--home", home, "claim", path, "--note", "x"); code != 0 {
		t.Fatalf("claim: %s", errs)
	}
	out, errs, code := runIn(t, repo, "--home", home, "release", path)
	if code != 0 || !strings.Contains(out, "released") || strings.ContainsRune(out, '\u202e') {
		t.Fatalf("release: exit %d, %q %s", code, out, errs)
	}
}
