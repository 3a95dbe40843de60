package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestBoardPathDotDotAfterSymlinkNamesTheFileReached: lnk is a symlink to
// src/deep, so lnk/../x.go is the file src/x.go (the system resolves lnk
// before it goes up). Rel cleans the path before it resolves symlinks and
// claims x.go at the root instead: the agent holds a file it does not
// edit, and the one it edits stays free for another. Before, Rel gave
// x.go; now it resolves each symlink before a ".." after it goes up, and
// gives src/x.go.
func TestBoardPathDotDotAfterSymlinkNamesTheFileReached(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	if err := os.MkdirAll(filepath.Join(dir, "src", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"src/x.go", "x.go"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join("src", "deep"), filepath.Join(dir, "lnk")); err != nil {
		t.Skip("no symlinks:", err)
	}
	real, err := os.ReadFile(dir + "/lnk/../x.go") // not filepath.Join, which cleans
	if err != nil {
		t.Fatal(err)
	}
	if same, _ := os.ReadFile(filepath.Join(dir, "src", "x.go")); string(same) != string(real) {
		t.Fatal("the system does not resolve lnk/../x.go to src/x.go here")
	}
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Rel(dir, "lnk/../x.go")
	if err != nil || got != "src/x.go" {
		t.Fatalf("Rel(lnk/../x.go) = %q, %v; want src/x.go, the file the system opens", got, err)
	}
}
