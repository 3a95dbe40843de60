package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestGuardSeesTheIndexGitCommits: git commit -a and git commit FILE
// commit from an index of their own (GIT_INDEX_FILE, which git gives the
// hook), not the one git add fills: the guard reads that one, so a
// claimed file changed but not added is refused all the same, as is one
// named on the command line.
func TestGuardSeesTheIndexGitCommits(t *testing.T) {
	t.Parallel()
	repoA := guardedPair(t, "reworking a", "src/a.go")
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null"}
	writeFile(t, filepath.Join(repoA, "src", "a.go"), "changed\n")
	for _, args := range [][]string{
		{"commit", "-q", "-a", "-m", "all"},
		{"commit", "-q", "-m", "one", "src/a.go"},
		{"commit", "-q", "-m", "one", "--only", "src/a.go"},
	} {
		if out, err := gitTry(repoA, env, args...); err == nil || !strings.Contains(out, "reworking a") {
			t.Errorf("git %v over B's claim: %v\n%s", args, err, out)
		}
	}
	// Staged: the other index holds it too.
	gitIn(t, repoA, "add", "src/a.go")
	writeFile(t, filepath.Join(repoA, "src", "b.go"), "changed\n")
	if out, err := gitTry(repoA, env, "commit", "-q", "-m", "b only", "src/b.go"); err != nil {
		t.Errorf("git commit src/b.go, which no claim covers, with a.go staged: %v\n%s", err, out)
	}
}

// TestGuardChecksACherryPick: git runs no pre-commit hook for a
// cherry-pick, a revert or a rebase's commits, so a commit they make of a
// claimed file is not checked.
func TestGuardChecksACherryPick(t *testing.T) {
	t.Skip("known gap: git runs no pre-commit hook for cherry-pick, revert and rebase (Known gaps: the guard sees only the commits git hooks)")
	t.Parallel()
	repoA, repoB, homeA, homeB := boardPair(t)
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null"}
	gitIn(t, repoA, "checkout", "-q", "-b", "side")
	writeFile(t, filepath.Join(repoA, "src", "a.go"), "changed\n")
	gitIn(t, repoA, "commit", "-q", "-a", "-m", "a on the side")
	gitIn(t, repoA, "checkout", "-q", "main")
	if _, errs, code := runIn(t, repoB, "--home", homeB, "claim", "src/a.go", "--note", "reworking a"); code != 0 {
		t.Fatalf("B's claim: %s", errs)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		var bv localapi.BoardView
		runInJSON(t, repoA, &bv, "--home", homeA, "board")
		return len(bv.Claims) == 1
	}, "A's board to show B's claim")
	if _, errs, code := runIn(t, repoA, "--home", homeA, "install", "git-guard"); code != 0 {
		t.Fatalf("install git-guard: %s", errs)
	}
	if out, err := gitTry(repoA, env, "cherry-pick", "side"); err == nil || !strings.Contains(out, "reworking a") {
		t.Fatalf("the cherry-pick over B's claim: %v\n%s", err, out)
	}
}

// guardedPair is boardPair with B's claim of paths (note) shown on A's
// board and the guard installed in A's repository, which it returns.
func guardedPair(t *testing.T, note string, paths ...string) string {
	t.Helper()
	repoA, repoB, homeA, homeB := boardPair(t)
	if _, errs, code := runIn(t, repoB, append([]string{"--home", homeB, "claim"}, append(paths, "--note", note)...)...); code != 0 {
		t.Fatalf("B's claim: %s", errs)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		var bv localapi.BoardView
		runInJSON(t, repoA, &bv, "--home", homeA, "board")
		return len(bv.Claims) == len(paths)
	}, "A's board to show B's claims")
	if _, errs, code := runIn(t, repoA, "--home", homeA, "install", "git-guard"); code != 0 {
		t.Fatalf("install git-guard: %s", errs)
	}
	return repoA
}
