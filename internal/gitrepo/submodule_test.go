package gitrepo

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaimInsideASubmoduleNamesItsRepository: a file inside a submodule
// (or any repository nested in the working copy) is a file of that
// repository: its commits are made there, and the guard there checks
// them against that repository's board. Claimed from the outer working
// copy it was put on the outer board as "lib/a.go", which no commit of
// the file ever meets. It is refused, naming the repository to claim it
// from; the submodule's own folder (its commit in the outer repository)
// is still the outer repository's, claimed as that one entry.
func TestClaimInsideASubmoduleNamesItsRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	base := t.TempDir()
	lib := filepath.Join(base, "lib")
	run(t, base, "init", "-q", "-b", "main", lib)
	if err := os.WriteFile(filepath.Join(lib, "a.go"), []byte("package lib\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, lib, "add", ".")
	run(t, lib, "commit", "-q", "-m", "lib")
	app := filepath.Join(base, "app")
	run(t, base, "init", "-q", "-b", "main", app)
	run(t, app, "commit", "-q", "--allow-empty", "-m", "app")
	run(t, app, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
	run(t, app, "commit", "-q", "-m", "the submodule")

	if _, paths, err := Project(ctx, app, "", []string{"lib/a.go"}); !errors.Is(err, ErrOutside) {
		t.Fatalf("a file of the submodule, claimed from the outer working copy: %q, %v", paths, err)
	}
	if _, paths, err := Project(ctx, app, "", []string{"lib/new/b.go"}); !errors.Is(err, ErrOutside) {
		t.Fatalf("a file not made yet in the submodule: %q, %v", paths, err)
	}
	// Its folder is one entry of the outer repository's commits: claimed
	// as itself (a claim on lib/** covers no commit of lib).
	for _, p := range []string{"lib", "lib/"} {
		if _, paths, err := Project(ctx, app, "", []string{p}); err != nil || len(paths) != 1 || paths[0] != "lib" {
			t.Fatalf("the submodule's folder %q: %q, %v", p, paths, err)
		}
	}
	// A linked worktree of the repository is not another one: claimed
	// from the main working copy as a whole, as parley worktree add does.
	run(t, app, "worktree", "add", "-q", "-b", "feature", filepath.Join(app, ".worktrees", "feature"))
	for _, p := range []string{".worktrees/feature", ".worktrees/feature/**", ".worktrees/feature/README"} {
		if _, paths, err := Project(ctx, app, "", []string{p}); err != nil || len(paths) != 1 || !strings.HasPrefix(paths[0], ".worktrees/feature/") {
			t.Fatalf("%s in a linked worktree: %q, %v", p, paths, err)
		}
	}
	// From inside, it is the submodule's own board.
	libKey, err := (&Repo{Root: lib}).ProjectKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if k, paths, err := Project(ctx, filepath.Join(app, "lib"), "", []string{"a.go"}); err != nil || k != libKey || paths[0] != "a.go" {
		t.Fatalf("claimed inside the submodule: %q %q, %v (want the key %q)", k, paths, err, libKey)
	}
}
