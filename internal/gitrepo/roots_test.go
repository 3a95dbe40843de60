package gitrepo

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMergeOfAnotherHistoryKeepsTheProject: a merge of an unrelated
// history (git merge --allow-unrelated-histories, a subtree merge) gives
// the repository a second root commit. The key is made from the smallest
// root, so when the merged one sorts first, every clone that has the
// merge names another project than the clones and branches that do not
// yet: the board splits in two, and each side's guard checks commits
// against its half.
func TestMergeOfAnotherHistoryKeepsTheProject(t *testing.T) {
	t.Skip("known gap: the project key is the smallest root commit's, and a merge of an unrelated history may change it (Known gaps)")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	run(t, dir, "commit", "-q", "--allow-empty", "-m", "first")
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	key, err := r.ProjectKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root := gitOutT(t, dir, "rev-list", "--max-parents=0", "HEAD")
	// Another history whose root sorts before this one's.
	for i := 0; ; i++ {
		run(t, dir, "checkout", "-q", "--orphan", fmt.Sprintf("other%d", i))
		run(t, dir, "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("other %d", i))
		if gitOutT(t, dir, "rev-parse", "HEAD") < root {
			break
		}
	}
	other := gitOutT(t, dir, "rev-parse", "HEAD")
	run(t, dir, "checkout", "-q", "main")
	run(t, dir, "merge", "-q", "--allow-unrelated-histories", "-m", "merge", other)
	if k2, err := r.ProjectKey(ctx); err != nil || k2 != key {
		t.Fatalf("after the merge of another history the key is %q, %v; was %q", k2, err, key)
	}
}

func gitOutT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(context.Background(), filepath.Clean(dir), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
