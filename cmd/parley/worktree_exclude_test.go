package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestWorktreeExcludeKeepsTheUsersLines: the repository's info/exclude is
// the user's file. Parley's line is added after its bytes, the user's last
// line (with no newline at its end) left whole, and only once however often
// a worktree is made.
func TestWorktreeExcludeKeepsTheUsersLines(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	p := filepath.Join(root, ".git", "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	mine := "# mine\n*.log\n\n  build/ \r\nno newline at the end"
	if err := os.WriteFile(p, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := excludeWorktrees(context.Background(), root); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := mine + "\n/" + worktreeDir + "/\n"; string(got) != want {
		t.Fatalf("info/exclude is\n%q\nwant\n%q", got, want)
	}
	// A repository with no info/exclude yet gets one of Parley's line alone.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := excludeWorktrees(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "/"+worktreeDir+"/\n" {
		t.Fatalf("a new info/exclude is %q", got)
	}
}
