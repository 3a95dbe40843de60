package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitGuardRefusesAHooksFolderOutsideTheRepository: core.hooksPath set
// in the user's git config to a folder of their own (~/.githooks) makes
// that folder every repository's hooks. Before, `install git-guard` in one
// repository wrote the guard there without a word, so every repository on
// the machine ran it on each commit, and the user's shared hooks changed.
// It is refused, as a hooks folder linked out of the repository is, and
// nothing is written there; --force writes it.
func TestGitGuardRefusesAHooksFolderOutsideTheRepository(t *testing.T) {
	t.Parallel()
	repo, other := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	shared := filepath.Join(t.TempDir(), "githooks")
	const text = "#!/bin/sh\necho checked by my shared hook\n"
	writeFile(t, filepath.Join(shared, "pre-commit"), text)
	if err := os.Chmod(filepath.Join(shared, "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitconfig := filepath.Join(t.TempDir(), "gitconfig")
	writeFile(t, gitconfig, "[core]\n\thooksPath = "+shared+"\n")
	env := []string{"GIT_CONFIG_GLOBAL=" + gitconfig}
	_, errs, code := runEnv(t, repo, env, "--home", home, "install", "git-guard")
	b, _ := os.ReadFile(filepath.Join(shared, "pre-commit"))
	ents, _ := os.ReadDir(shared)
	if code == 0 || string(b) != text || len(ents) != 1 || !strings.Contains(errs, "outside the repository") {
		t.Fatalf("install into the user's shared hooks folder (which %s uses too): exit %d (%q); its pre-commit reads %q, %d files there", other, code, errs, b, len(ents))
	}
	if out, errs, code := runEnv(t, repo, env, "--home", home, "install", "--force", "git-guard"); code != 0 {
		t.Fatalf("install --force: exit %d\n%s\n%s", code, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(shared, "pre-commit")); !strings.Contains(string(b), " guard || exit 1") {
		t.Fatalf("install --force did not write the shared hook: %q", b)
	}
	if out, errs, code := runEnv(t, repo, env, "--home", home, "uninstall", "git-guard"); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s\n%s", code, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(shared, "pre-commit")); string(b) != text {
		t.Fatalf("after uninstall the shared hook reads %q", b)
	}
}
