package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// runEnv is runIn with more environment (KEY=VALUE).
func runEnv(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(parleyBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return runPrepared(t, cmd)
}

// boardOf returns the live claims of the project around dir.
func boardOf(t *testing.T, dir, home string) []localapi.Claim {
	t.Helper()
	var bv localapi.BoardView
	runInJSON(t, dir, &bv, "--home", home, "board")
	return bv.Claims
}

// TestCLIBoardAsAgent: claim, release and worktree add speak as
// $PARLEY_AGENT (which parley run sets) when --as is not given, as room
// say and inbox do: an agent's claim does not renew the person's, nor its
// release take the person's away. release --all with nothing held is no
// error, and a folder's history shows the claims under it.
func TestCLIBoardAsAgent(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	registerAgents(t, home, "bot", "typer", "nobody")
	bot := []string{"PARLEY_AGENT=bot"}

	if _, errs, code := runIn(t, repo, "--home", home, "claim", "src/a.go", "--note", "the person's"); code != 0 {
		t.Fatalf("claim: %s", errs)
	}
	if _, errs, code := runEnv(t, repo, bot, "--home", home, "claim", "src/a.go", "--note", "the bot's"); code == 0 || !strings.Contains(errs, "the person's") {
		t.Fatalf("bot's claim over the person's: exit %d, %q", code, errs)
	}
	if _, errs, code := runEnv(t, repo, bot, "--home", home, "release", "src/a.go"); code == 0 {
		t.Fatalf("bot released the person's claim: %q", errs)
	}
	cs := boardOf(t, repo, home)
	if len(cs) != 1 || cs[0].Note != "the person's" || !strings.HasPrefix(cs[0].Holder, human+"@") {
		t.Fatalf("the person's claim changed: %+v", cs)
	}
	// --as comes first.
	if _, errs, code := runEnv(t, repo, bot, "--home", home, "claim", "src/b.go", "--note", "for typer", "--as", "typer"); code != 0 {
		t.Fatalf("claim --as typer: %s", errs)
	}
	if _, errs, code := runEnv(t, repo, bot, "--home", home, "worktree", "add", "w1"); code != 0 {
		t.Fatalf("worktree add as bot: %s", errs)
	}
	held := map[string]string{}
	for _, c := range boardOf(t, repo, home) {
		held[c.Path], _, _ = strings.Cut(c.Holder, "@")
	}
	if held["src/b.go"] != "typer" || held[".worktrees/w1/**"] != "bot" {
		t.Fatalf("holders: %v", held)
	}

	// release --all: nothing held is what was asked.
	out, errs, code := runEnv(t, repo, []string{"PARLEY_AGENT=nobody"}, "--home", home, "release", "--all")
	if code != 0 || !strings.Contains(out, "nothing") {
		t.Fatalf("release --all with nothing held: exit %d, %q %q", code, out, errs)
	}
	if out, errs, code := runEnv(t, repo, bot, "--home", home, "release", "--all"); code != 0 || !strings.Contains(out, ".worktrees/w1/**") {
		t.Fatalf("bot's release --all: exit %d, %q %q", code, out, errs)
	}
	// A folder's history, the folder gone: the claims on it and under it.
	if _, errs, code := runIn(t, repo, "--home", home, "worktree", "remove", "w1"); code != 0 {
		t.Fatalf("worktree remove: %s", errs)
	}
	if out, errs, code := runIn(t, repo, "--home", home, "board", "history", ".worktrees/w1"); code != 0 || !strings.Contains(out, ".worktrees/w1/**") {
		t.Fatalf("history of the folder: exit %d, %q %q", code, out, errs)
	}
}

// TestCLIWorktreeClaims: adding a worktree that exists fails and leaves its
// claim; removing one another agent claimed is refused naming them, and
// nothing goes; removing one releases its claim, also from inside another
// worktree.
func TestCLIWorktreeClaims(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "a")
	a := up(t, home, "--listen", loopback)
	holders := func() map[string]string {
		m := map[string]string{}
		for _, c := range boardOf(t, repo, home) {
			m[c.Path] = c.Holder + " " + c.Note
		}
		return m
	}

	if _, errs, code := runIn(t, repo, "--home", home, "worktree", "add", "feat2"); code != 0 {
		t.Fatalf("worktree add: %s", errs)
	}
	before := holders()[".worktrees/feat2/**"]
	if _, errs, code := runIn(t, repo, "--home", home, "worktree", "add", "feat2", "--note", "again"); code == 0 || !strings.Contains(errs, "already exists") {
		t.Fatalf("second worktree add: exit %d, %q", code, errs)
	}
	if got := holders()[".worktrees/feat2/**"]; got != before || got == "" {
		t.Fatalf("the second add changed the claim: %q, was %q", got, before)
	}

	registerAgents(t, home, "bot", "typer")
	bot := []string{"PARLEY_AGENT=bot"}
	if _, errs, code := runEnv(t, repo, bot, "--home", home, "worktree", "add", "w6", "--note", "bot's work"); code != 0 {
		t.Fatalf("worktree add as bot: %s", errs)
	}
	wip := filepath.Join(repo, ".worktrees", "w6", "wip.go")
	if err := os.WriteFile(wip, []byte("not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--as", "typer"}},
		{[]string{"PARLEY_AGENT=typer"}, nil},
	} {
		args := append([]string{"--home", home, "worktree", "remove", "w6", "--force"}, c.args...)
		if _, errs, code := runEnv(t, repo, c.env, args...); code == 0 || !strings.Contains(errs, "bot") || !strings.Contains(errs, "bot's work") {
			t.Fatalf("typer removed bot's worktree: exit %d, %q", code, errs)
		}
		if _, err := os.Stat(wip); err != nil {
			t.Fatalf("bot's file is gone: %v", err)
		}
	}
	if !strings.Contains(holders()[".worktrees/w6/**"], "bot@") {
		t.Fatalf("bot's claim: %v", holders())
	}
	// The person (no --as, no PARLEY_AGENT) removes this node's agent's
	// worktree, from inside another worktree: its claim goes too.
	if out, errs, code := runEnv(t, filepath.Join(repo, ".worktrees", "feat2", "src"), []string{"PARLEY_AGENT="}, "--home", home, "worktree", "remove", "w6", "--force"); code != 0 || !strings.Contains(out, "released") {
		t.Fatalf("worktree remove: exit %d, %q %q", code, out, errs)
	}
	if h := holders(); h[".worktrees/w6/**"] != "" || h[".worktrees/feat2/**"] == "" {
		t.Fatalf("after remove: %v", h)
	}
	if _, err := os.Stat(filepath.Join(repo, ".worktrees", "w6")); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there: %v", err)
	}

	// Another node, on the same board, cannot take this node's worktree
	// away from under its claim (its release would leave the claim).
	homeB := filepath.Join(t.TempDir(), "b")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr())
	befriend(t, home, homeB, peerID(t, homeB))
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		for _, c := range boardOf(t, repo, homeB) {
			if c.Path == ".worktrees/feat2/**" {
				return true
			}
		}
		return false
	}, "B's board to show A's worktree")
	if _, errs, code := runIn(t, repo, "--home", homeB, "worktree", "remove", "feat2"); code == 0 || !strings.Contains(errs, "my own worktree feat2") {
		t.Fatalf("B removed A's worktree: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(repo, ".worktrees", "feat2")); err != nil || holders()[".worktrees/feat2/**"] == "" {
		t.Fatalf("A's worktree after B's remove: %v, %v", err, holders())
	}
}

// gitEnv is the environment of the git commands the guard tests run.
var gitEnv = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
	"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org", "GIT_CONFIG_GLOBAL=/dev/null"}

// gitTry runs git in dir with env added and returns its output and error.
func gitTry(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(append(os.Environ(), gitEnv...), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

func gone(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", p, err)
		}
	}
}

// TestCLIGitGuardHooks: the guard is not written into a hook in another
// language; it refuses a rename away from a claimed file (paths with spaces
// and letters beyond ASCII too) and a merge that changes one; installed
// from a worktree, uninstall from the main working copy takes all of it
// out; a hook git tracks is left alone unless --force.
func TestCLIGitGuardHooks(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	hooks := filepath.Join(repo, ".git", "hooks")
	preCommit, preMerge := filepath.Join(hooks, "pre-commit"), filepath.Join(hooks, "pre-merge-commit")
	parley := func(dir string, args ...string) (string, string, int) {
		t.Helper()
		return runEnv(t, dir, []string{"GIT_CONFIG_GLOBAL=/dev/null"}, append([]string{"--home", home}, args...)...)
	}
	alice := []string{"PARLEY_AGENT=alice"}
	registerAgents(t, home, "bob")

	// A python hook: refused, and it stays as it was.
	py := "#!/usr/bin/env python3\nimport sys\nsys.exit(0)\n"
	writeFile(t, preCommit, py)
	if _, errs, code := parley(repo, "install", "git-guard"); code == 0 || !strings.Contains(errs, "not a shell script") || !strings.Contains(errs, " guard") {
		t.Fatalf("install into a python hook: exit %d, %q", code, errs)
	}
	if b, _ := os.ReadFile(preCommit); string(b) != py {
		t.Fatalf("the python hook changed: %q", b)
	}
	gone(t, preMerge)
	if err := os.Remove(preCommit); err != nil {
		t.Fatal(err)
	}

	odd := "sp ace/grüße.go"
	writeFile(t, filepath.Join(repo, odd), "x\n")
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "odd")
	if _, errs, code := parley(repo, "claim", "src/a.go", odd, "--note", "bob's rework", "--as", "bob"); code != 0 {
		t.Fatalf("claim: %s", errs)
	}
	if _, errs, code := parley(repo, "install", "git-guard"); code != 0 {
		t.Fatalf("install git-guard: %s", errs)
	}
	for _, mv := range [][2]string{{"src/a.go", "src/a2.go"}, {odd, "plain.go"}} {
		gitIn(t, repo, "mv", mv[0], mv[1])
		if out, err := gitTry(repo, alice, "commit", "-q", "-m", "rename"); err == nil || !strings.Contains(out, "bob's rework") {
			t.Fatalf("a rename of %s went through the guard: %v\n%s", mv[0], err, out)
		}
		gitIn(t, repo, "reset", "-q", "--hard")
	}
	// A merge bringing a change to a claimed file.
	gitIn(t, repo, "checkout", "-q", "-b", "side")
	writeFile(t, filepath.Join(repo, "src", "a.go"), "side\n")
	if out, err := gitTry(repo, []string{"PARLEY_GUARD=off"}, "commit", "-q", "-am", "side"); err != nil {
		t.Fatalf("commit on side: %v\n%s", err, out)
	}
	gitIn(t, repo, "checkout", "-q", "main")
	if out, err := gitTry(repo, alice, "merge", "--no-ff", "-m", "merge side", "side"); err == nil || !strings.Contains(out, "bob's rework") {
		t.Fatalf("the merge went through the guard: %v\n%s", err, out)
	}
	gitIn(t, repo, "merge", "--abort")
	if _, errs, code := parley(repo, "uninstall", "git-guard"); code != 0 {
		t.Fatalf("uninstall: %s", errs)
	}
	gone(t, preCommit, preMerge)

	// Installed from a worktree, uninstalled from the main working copy.
	wt := filepath.Join(t.TempDir(), "wt")
	gitIn(t, repo, "worktree", "add", "-q", wt)
	if _, errs, code := parley(wt, "install", "git-guard"); code != 0 {
		t.Fatalf("install from the worktree: %s", errs)
	}
	if _, err := os.Stat(preMerge); err != nil {
		t.Fatalf("install from the worktree: %v", err)
	}
	if _, errs, code := parley(repo, "uninstall", "git-guard"); code != 0 {
		t.Fatalf("uninstall from the main working copy: %s", errs)
	}
	gone(t, preCommit, preMerge)

	// A hook that is a tracked file of the repository.
	script := filepath.Join(repo, "scripts", "pre-commit.sh")
	writeFile(t, script, "#!/bin/sh\nexit 0\n")
	gitIn(t, repo, "add", "scripts")
	gitIn(t, repo, "commit", "-q", "-m", "hook script")
	if err := os.Symlink("../../scripts/pre-commit.sh", preCommit); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := parley(repo, "install", "git-guard"); code == 0 || !strings.Contains(errs, "tracks") || !strings.Contains(errs, "--force") {
		t.Fatalf("install into a tracked hook: exit %d, %q", code, errs)
	}
	if b, _ := os.ReadFile(script); string(b) != "#!/bin/sh\nexit 0\n" {
		t.Fatalf("the tracked hook changed: %q", b)
	}
	gone(t, preMerge)
	if _, errs, code := parley(repo, "install", "git-guard", "--force"); code != 0 {
		t.Fatalf("install --force: %s", errs)
	}
	if _, errs, code := parley(repo, "uninstall", "git-guard"); code != 0 {
		t.Fatalf("uninstall: %s", errs)
	}
	if b, _ := os.ReadFile(script); string(b) != "#!/bin/sh\nexit 0\n" {
		t.Fatalf("the tracked hook after uninstall: %q", b)
	}
	if err := os.Remove(preCommit); err != nil {
		t.Fatal(err)
	}
	// core.hooksPath in the work tree, a folder git tracks.
	writeFile(t, filepath.Join(repo, ".husky", "commit-msg"), "#!/bin/sh\nexit 0\n")
	gitIn(t, repo, "add", ".husky")
	gitIn(t, repo, "commit", "-q", "-m", "husky")
	gitIn(t, repo, "config", "core.hooksPath", ".husky")
	if _, errs, code := parley(filepath.Join(repo, "src"), "install", "git-guard"); code == 0 || !strings.Contains(errs, "tracks") || !strings.Contains(errs, "--force") {
		t.Fatalf("install into a tracked hooks folder: exit %d, %q", code, errs)
	}
	gone(t, filepath.Join(repo, ".husky", "pre-commit"), filepath.Join(repo, ".husky", "pre-merge-commit"))
}
