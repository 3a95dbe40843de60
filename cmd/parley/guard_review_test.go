package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Review: a hooks folder git tracks (core.hooksPath = .husky) whose hook files
// are tracked symbolic links to files outside the repository. install
// git-guard refuses tracked hooks without --force, but it looks only at
// where the link points (outside any work tree), not at the link, which
// git tracks: it goes through and writes the guard's lines into the files
// outside the repository (an existing one is edited, a missing one is
// created), chosen by whoever wrote the repository.
func TestR4GitGuardTrackedSymlinkHooks(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	outside := t.TempDir()
	victim := filepath.Join(outside, "notes.txt")
	const text = "# my notes\nkeep me as I am\n"
	if err := os.WriteFile(victim, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	created := filepath.Join(outside, "made-by-parley")
	husky := filepath.Join(repo, ".husky")
	writeFile(t, filepath.Join(husky, "commit-msg"), "#!/bin/sh\nexit 0\n")
	if err := os.Symlink(victim, filepath.Join(husky, "pre-commit")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(created, filepath.Join(husky, "pre-merge-commit")); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".husky")
	gitIn(t, repo, "commit", "-q", "-m", "husky hooks")
	if out, err := gitTry(repo, nil, "ls-files", ".husky"); err != nil || !strings.Contains(out, ".husky/pre-commit") || !strings.Contains(out, ".husky/pre-merge-commit") {
		t.Fatalf("the links are not tracked: %v %s", err, out)
	}
	gitIn(t, repo, "config", "core.hooksPath", ".husky")

	_, errs, code := runEnv(t, repo, []string{"GIT_CONFIG_GLOBAL=/dev/null"}, "--home", home, "install", "git-guard")
	b, _ := os.ReadFile(victim)
	_, madeErr := os.Lstat(created)
	if code == 0 || string(b) != text || madeErr == nil {
		t.Fatalf("install git-guard into tracked hook links: exit %d (stderr %q)\n%s now reads %q\n%s exists: %v",
			code, errs, victim, b, created, madeErr == nil)
	}
}

// Review: the install lock (29ae722) is not taken by install git-guard, which
// plans and applies on its own: six installs at once in one repository
// each read no record, and one that retried after another's hook appeared
// records it as the user's (Existed), so uninstall leaves a "#!/bin/sh"
// hook behind: the very defect the lock fixed for the clients' files.
func TestR4GitGuardInstallsAtOnce(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	hooks := filepath.Join(repo, ".git", "hooks")
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null"}
	for round := range 10 {
		var wg sync.WaitGroup
		errs := make([]string, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if out, e, code := runEnv(t, repo, env, "--home", home, "install", "git-guard"); code != 0 {
					errs[i] = fmt.Sprintf("exit %d\n%s\n%s", code, out, e)
				}
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != "" {
				t.Fatalf("round %d: install: %s", round, e)
			}
		}
		if out, e, code := runEnv(t, repo, env, "--home", home, "uninstall", "git-guard"); code != 0 {
			t.Fatalf("round %d: uninstall: exit %d\n%s\n%s", round, code, out, e)
		}
		for _, name := range []string{"pre-commit", "pre-merge-commit"} {
			if b, err := os.ReadFile(filepath.Join(hooks, name)); err == nil {
				t.Fatalf("round %d: after install x6 and uninstall, %s is left: %q", round, name, b)
			}
		}
	}
}

// Review: a guard an earlier Parley (7a6772e) installed from a worktree is
// recorded under the worktree's folder. This Parley looks for the record
// under the main working copy only: installing again from the worktree
// (to get the new pre-merge-commit hook) finds no record, takes the
// pre-commit hook Parley made for the user's own, and uninstall then
// leaves a "#!/bin/sh" pre-commit behind (and the old record for good).
func TestR4OldWorktreeGuardInstallUninstalls(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	wt := filepath.Join(t.TempDir(), "wt")
	gitIn(t, repo, "worktree", "add", "-q", wt)
	home := filepath.Join(t.TempDir(), "h")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	installedBy7a6772e(t, home, filepath.Join(repo, ".git", "hooks"), wt, filepath.Join(t.TempDir(), "parley-old"))
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null"}
	for _, args := range [][]string{{"install", "git-guard"}, {"uninstall", "git-guard"}} {
		if out, errs, code := runEnv(t, wt, env, append([]string{"--home", home}, args...)...); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
	}
	for _, name := range []string{"pre-commit", "pre-merge-commit"} {
		if b, err := os.ReadFile(filepath.Join(repo, ".git", "hooks", name)); err == nil {
			t.Errorf("after the earlier install, an install and an uninstall, %s is left: %q", name, b)
		}
	}
}

// installedBy7a6772e leaves hooks and home as `parley install git-guard`
// of Parley 7a6772e, run as command from the worktree wt of a repository
// without a pre-commit hook, left them: the hook it created and its record,
// named by the worktree's folder (its bytes as that build wrote them,
// compared once with a build of it). Building that Parley in the test
// took most of a minute of CI.
func installedBy7a6772e(t *testing.T, home, hooks, wt, command string) {
	t.Helper()
	for _, p := range []string{home, hooks, wt, command} {
		if strings.ContainsAny(p, " '\"\\$`") {
			t.Fatalf("%q would be quoted in the hook; the fixture writes paths as they are", p)
		}
	}
	hook := filepath.Join(hooks, "pre-commit")
	text := "#!/bin/sh\n" +
		"# >>> parley git-guard (parley uninstall git-guard takes it out)\n" +
		"if command -v " + command + " >/dev/null 2>&1; then\n" +
		"\t" + command + " --home " + home + " guard || exit 1\n" +
		"fi\n" +
		"# <<< parley git-guard\n"
	if err := os.WriteFile(hook, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	after := sha256.Sum256([]byte(text))
	key := sha256.Sum256([]byte(wt))
	rec := fmt.Sprintf(`{
  "client": "git-guard",
  "scope": "project",
  "project": %q,
  "command": %q,
  "files": [
    {
      "path": %q,
      "existed": false,
      "restorable": true,
      "after_sha256": %q
    }
  ]
}
`, wt, command, hook, hex.EncodeToString(after[:]))
	dir := filepath.Join(home, "install")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "git-guard-project-"+hex.EncodeToString(key[:6])+".json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A hook that is a link (git does not track it) to a file outside the
// repository is refused without --force, and taken with it; a link to
// nothing is refused even with --force, and nothing is made where it
// points.
func TestGitGuardHookLinksOutside(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null"}
	outside := t.TempDir()
	target := filepath.Join(outside, "pre-commit.sh")
	const text = "#!/bin/sh\nexit 0\n"
	writeFile(t, target, text)
	hooks := filepath.Join(repo, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(hooks, "pre-commit")); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runEnv(t, repo, env, "--home", home, "install", "git-guard")
	if b, _ := os.ReadFile(target); code == 0 || string(b) != text || !strings.Contains(errs, "outside the repository") {
		t.Fatalf("install through a link out of the repository: exit %d (%q), the file reads %q", code, errs, b)
	}
	if out, errs, code := runEnv(t, repo, env, "--home", home, "install", "--force", "git-guard"); code != 0 {
		t.Fatalf("install --force: exit %d\n%s\n%s", code, out, errs)
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), " guard || exit 1") {
		t.Fatalf("install --force did not edit %s: %q", target, b)
	}
	if out, errs, code := runEnv(t, repo, env, "--home", home, "uninstall", "git-guard"); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s\n%s", code, out, errs)
	}
	nowhere := filepath.Join(outside, "made-by-parley")
	merge := filepath.Join(hooks, "pre-merge-commit")
	if err := os.Remove(merge); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.Symlink(nowhere, merge); err != nil {
		t.Fatal(err)
	}
	_, errs, code = runEnv(t, repo, env, "--home", home, "install", "--force", "git-guard")
	if _, err := os.Lstat(nowhere); code == 0 || err == nil || !strings.Contains(errs, "does not exist") {
		t.Fatalf("install --force through a dangling link: exit %d (%q); %s made: %v", code, errs, nowhere, err == nil)
	}
}

// A hooks folder in the work tree that is a link out of the repository
// (core.hooksPath=.husky, .husky a link git tracks) is refused without
// --force: nothing is written where it points.
func TestGitGuardHooksFolderLinksOutside(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null"}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(repo, ".husky")); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".husky")
	gitIn(t, repo, "commit", "-q", "-m", "husky link")
	gitIn(t, repo, "config", "core.hooksPath", ".husky")
	_, errs, code := runEnv(t, repo, env, "--home", home, "install", "git-guard")
	ents, _ := os.ReadDir(outside)
	if code == 0 || len(ents) != 0 || !strings.Contains(errs, "outside the repository") {
		t.Fatalf("install into a hooks folder linked out of the repository: exit %d (%q), %d files made there", code, errs, len(ents))
	}
}
