package install

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGitGuard: the hook goes into a new or an existing pre-commit file, a
// second install changes nothing, and uninstall gives back the bytes that
// were there (or no file), also when the user changed the file meanwhile.
func TestGitGuard(t *testing.T) {
	for _, c := range []struct {
		name, before string
		exists       bool
		edit         func([]byte) []byte // the user's change after the install
	}{
		{name: "new"},
		{name: "existing", before: "#!/bin/bash\nset -e\nmake lint\n", exists: true},
		{name: "no shebang", before: "make lint\n", exists: true},
		{name: "edited", before: "#!/bin/sh\nmake lint\n", exists: true,
			edit: func(b []byte) []byte { return append(b, "make test\n"...) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
			hooks := filepath.Join(base, "repo", ".git", "hooks")
			path := filepath.Join(hooks, "pre-commit")
			if c.exists {
				if err := os.MkdirAll(hooks, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(c.before), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			p, err := InstallGitGuard(env, hooks, "/usr/bin/parley", []string{"--home", "/h"})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Apply(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || !strings.Contains(string(got), "/usr/bin/parley --home /h guard || exit 1") {
				t.Fatalf("hook: %q, %v", got, err)
			}
			if c.exists && !strings.HasSuffix(string(got), strings.SplitN(c.before, "\n", 2)[1]) && strings.HasPrefix(c.before, "#!") {
				t.Fatalf("the user's lines moved: %q", got)
			}
			if st, _ := os.Stat(path); st.Mode().Perm()&0o100 == 0 {
				t.Fatalf("hook not executable: %v", st.Mode())
			}
			merge := filepath.Join(hooks, "pre-merge-commit")
			if m, err := os.ReadFile(merge); err != nil || !strings.Contains(string(m), "/usr/bin/parley --home /h guard || exit 1") {
				t.Fatalf("pre-merge-commit hook: %q, %v", m, err)
			}
			again, err := InstallGitGuard(env, hooks, "/usr/bin/parley", []string{"--home", "/h"})
			if err != nil || again.Changed() {
				t.Fatalf("second install: %+v, %v", again, err)
			}
			want := []byte(c.before)
			if c.edit != nil {
				edited := c.edit(got)
				if err := os.WriteFile(path, edited, 0o700); err != nil {
					t.Fatal(err)
				}
				want = c.edit([]byte(c.before))
			}
			u, err := UninstallGitGuard(env, hooks)
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Apply(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(hooks, "pre-merge-commit")); !os.IsNotExist(err) {
				t.Fatalf("the pre-merge-commit hook Parley made is still there: %v", err)
			}
			after, err := os.ReadFile(path)
			if !c.exists {
				if !os.IsNotExist(err) {
					t.Fatalf("the hook Parley made is still there: %q %v", after, err)
				}
				if _, err := os.Stat(hooks); !os.IsNotExist(err) {
					t.Fatalf("the folders Parley made are still there: %v", err)
				}
				return
			}
			if !bytes.Equal(after, want) {
				t.Fatalf("after uninstall %q, want %q", after, want)
			}
		})
	}
}

// TestGitGuardNotShell: an existing hook in another language than the
// shell's is refused, naming the command to call from it, and nothing is
// written; shells named directly or through env take the block.
func TestGitGuardNotShell(t *testing.T) {
	for _, c := range []struct {
		shebang string
		shell   bool
	}{
		{"#!/usr/bin/env python3\n", false},
		{"#!/usr/bin/python3 -u\n", false},
		{"#!/usr/bin/env -S node --no-warnings\n", false},
		{"#!/usr/bin/perl\n", false},
		{"#!/bin/sh\n", true},
		{"#!/usr/bin/env bash\n", true},
		{"#! /bin/dash -e\n", true},
		{"#!/bin/zsh\n", true},
		{"", true},
	} {
		t.Run(c.shebang, func(t *testing.T) {
			base := t.TempDir()
			env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
			hooks := filepath.Join(base, "repo", ".git", "hooks")
			if err := os.MkdirAll(hooks, 0o755); err != nil {
				t.Fatal(err)
			}
			before := c.shebang + "print('lint')\n"
			path := filepath.Join(hooks, "pre-commit")
			if err := os.WriteFile(path, []byte(before), 0o755); err != nil {
				t.Fatal(err)
			}
			p, err := InstallGitGuard(env, hooks, "/usr/bin/parley", []string{"--home", "/h"})
			if c.shell {
				if err != nil {
					t.Fatalf("a shell script refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrNotShell) || !strings.Contains(err.Error(), "not a shell script") ||
				!strings.Contains(err.Error(), "/usr/bin/parley --home /h guard") || p != nil {
				t.Fatalf("install into %q: %v", c.shebang, err)
			}
			if got, _ := os.ReadFile(path); string(got) != before {
				t.Fatalf("the hook changed: %q", got)
			}
			if _, err := os.Stat(filepath.Join(hooks, "pre-merge-commit")); !os.IsNotExist(err) {
				t.Fatalf("a hook was written: %v", err)
			}
			// The block an older Parley put under such a #! line: install
			// still refuses, uninstall takes it out.
			broken := c.shebang + guardBlock("/usr/bin/parley", nil) + "print('lint')\n"
			if err := os.WriteFile(path, []byte(broken), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil); !errors.Is(err, ErrNotShell) {
				t.Fatalf("install over the old block: %v", err)
			}
			u, err := UninstallGitGuard(env, hooks)
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Apply(); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != before {
				t.Fatalf("after uninstall: %q, want %q", got, before)
			}
		})
	}
}

// TestGitGuardRefusesACRLFHook: a hook whose #! line ends in CRLF is one
// git cannot run (the system looks for a program named "/bin/bash\r"):
// install refuses it with a fix that works on any system (not GNU sed's
// -i), and writes nothing. The fix, run as given, leaves the hook with LF
// line ends and its mode.
func TestGitGuardRefusesACRLFHook(t *testing.T) {
	for _, before := range []string{"#!/bin/bash\r\nmake lint\r\n", "#!/bin/sh\r\n", "#!/bin/sh\r\nmake lint\nexit 0\n"} {
		base := t.TempDir()
		repo := filepath.Join(base, "it's a repo")
		env := Env{Home: base, ProjectDir: repo, ParleyHome: filepath.Join(base, "parley")}
		hooks := filepath.Join(repo, ".git", "hooks")
		path := filepath.Join(hooks, "pre-commit")
		writeHook(t, path, before)
		if err := os.Chmod(path, 0o750); err != nil {
			t.Fatal(err)
		}
		_, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil)
		if !errors.Is(err, ErrNotShell) || !strings.Contains(err.Error(), "CRLF") || !strings.Contains(err.Error(), "dos2unix") || strings.Contains(err.Error(), "sed -i") {
			t.Fatalf("install into %q: %v", before, err)
		}
		if got, _ := os.ReadFile(path); string(got) != before {
			t.Fatalf("the hook changed: %q", got)
		}
		if _, err := os.Stat(filepath.Join(hooks, "pre-merge-commit")); !os.IsNotExist(err) {
			t.Fatalf("a hook was written: %v", err)
		}
		_, fix, ok := strings.Cut(err.Error(), "or `tr ")
		fix, _, ok2 := strings.Cut(fix, "`")
		if !ok || !ok2 {
			t.Fatalf("no tr command in: %v", err)
		}
		if out, err := exec.Command("sh", "-c", "tr "+fix).CombinedOutput(); err != nil {
			t.Fatalf("the fix given: %v\n%s", err, out)
		}
		if got := string(mustRead(t, path)); got != strings.ReplaceAll(before, "\r", "") {
			t.Fatalf("after the fix given: %q", got)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o750 {
			t.Fatalf("after the fix given, the mode is not kept: %v %v", st.Mode(), err)
		}
		if ents, _ := os.ReadDir(hooks); len(ents) != 1 {
			t.Fatalf("the fix given left files behind: %v", ents)
		}
	}
}

// A CRLF hook that holds the guard already (an older Parley put it there)
// is refused as well, not reported installed: git runs none of it.
func TestGitGuardRefusesACRLFHookThatHoldsTheGuard(t *testing.T) {
	base := t.TempDir()
	env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
	hooks := filepath.Join(base, "repo", ".git", "hooks")
	path := filepath.Join(hooks, "pre-commit")
	before := "#!/bin/sh\r\n" + guardBlock("/usr/bin/parley", nil) + "make lint\r\n"
	writeHook(t, path, before)
	_, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil)
	if !errors.Is(err, ErrNotShell) || !strings.Contains(err.Error(), "CRLF") {
		t.Fatalf("a CRLF hook git cannot run that holds the guard: %v", err)
	}
	if got := string(mustRead(t, path)); got != before {
		t.Fatalf("the hook changed: %q", got)
	}
}

// A hook with no #! line, which git runs with sh, is taken even with CR
// line ends (a comment made on Windows; a shell command with a \r was
// broken before the guard came): the guard goes in, and a note says how
// to convert it.
func TestGitGuardTakesACRLFHookWithoutAShebang(t *testing.T) {
	for _, before := range []string{"# made on Windows\r\nexit 0\n", "make lint\r\n"} {
		base := t.TempDir()
		env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
		hooks := filepath.Join(base, "repo", ".git", "hooks")
		path := filepath.Join(hooks, "pre-commit")
		writeHook(t, path, before)
		p, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil)
		if err != nil {
			t.Fatalf("refused a hook git runs, %q: %v", before, err)
		}
		if err := p.Apply(); err != nil {
			t.Fatal(err)
		}
		if got := string(mustRead(t, path)); got != guardBlock("/usr/bin/parley", nil)+before {
			t.Fatalf("%q became %q", before, got)
		}
		if !slices.ContainsFunc(p.Notes, func(n string) bool {
			return strings.Contains(n, path) && strings.Contains(n, "CRLF") && strings.Contains(n, "dos2unix")
		}) {
			t.Fatalf("no note of the CRLF line ends: %q", p.Notes)
		}
	}
}

// TestGitGuardRefusesAHardLinkedHook: a hook with another name (a hard
// link) is refused when applied: a replace would part the names. The plan
// (--dry-run) shows the change, and notes the refusal.
func TestGitGuardRefusesAHardLinkedHook(t *testing.T) {
	base := t.TempDir()
	env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
	hooks := filepath.Join(base, "repo", ".git", "hooks")
	path := filepath.Join(hooks, "pre-commit")
	before := "#!/bin/sh\nmake lint\n"
	writeHook(t, path, before)
	other := filepath.Join(base, "shared-pre-commit")
	if err := os.Link(path, other); err != nil {
		t.Fatal(err)
	}
	p, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil)
	if err != nil {
		t.Fatalf("the plan (--dry-run) of an install into a hard-linked hook: %v", err)
	}
	if !strings.Contains(p.Diff(), "+"+guardBegin) || !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, path) && strings.Contains(n, "refused") }) {
		t.Fatalf("the plan shows no change or no refusal: %q %q", p.Diff(), p.Notes)
	}
	if err := p.Apply(); !errors.Is(err, ErrHardLinked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("install into a hard-linked hook: %v", err)
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-merge-commit")); !os.IsNotExist(err) {
		t.Fatalf("a refused install wrote another hook: %v", err)
	}
	for _, p := range []string{path, other} {
		if got, _ := os.ReadFile(p); string(got) != before {
			t.Fatalf("%s changed: %q", p, got)
		}
	}
}

func writeHook(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestGitGuardDanglingLink: a hook that is a link to nothing is refused,
// and no file is made where it points.
func TestGitGuardDanglingLink(t *testing.T) {
	base := t.TempDir()
	env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
	hooks := filepath.Join(base, "repo", ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(base, "elsewhere", "made-by-parley")
	if err := os.Symlink(target, filepath.Join(hooks, "pre-merge-commit")); err != nil {
		t.Fatal(err)
	}
	p, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		if err == nil {
			err = p.Apply()
		}
		t.Fatalf("install through a dangling link: %v", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Fatalf("%s was made", target)
	}
	if _, err := os.Lstat(filepath.Join(hooks, "pre-commit")); err == nil {
		t.Fatal("pre-commit written though the install was refused")
	}
}

// TestAdoptGitGuardRecord: a record made under a worktree's folder moves
// to the main working copy's when that has none, and not over one.
func TestAdoptGitGuardRecord(t *testing.T) {
	base := t.TempDir()
	wt := filepath.Join(base, "wt")
	env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
	hooks := filepath.Join(base, "repo", ".git", "hooks")
	old := env
	old.ProjectDir = wt
	p, err := InstallGitGuard(old, hooks, "/usr/bin/parley", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	if moved, err := AdoptGitGuardRecord(env, wt); err != nil || !moved {
		t.Fatalf("adopt: %v %v", moved, err)
	}
	if _, err := os.Stat(recordPath(old, GitGuard, Project)); err == nil {
		t.Fatal("the worktree's record is still there")
	}
	rec, err := loadRecord(recordPath(env, GitGuard, Project))
	if err != nil || rec == nil || rec.Project != env.ProjectDir || len(rec.Files) != len(GuardHooks) {
		t.Fatalf("moved record: %+v %v", rec, err)
	}
	// Again: the main copy has its record now, nothing moves.
	if err := saveRecord(recordPath(old, GitGuard, Project), rec); err != nil {
		t.Fatal(err)
	}
	if moved, err := AdoptGitGuardRecord(env, wt); err != nil || moved {
		t.Fatalf("adopt over a record: %v %v", moved, err)
	}
	// The uninstall, from the main copy's record, leaves no hook.
	u, err := UninstallGitGuard(env, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Apply(); err != nil {
		t.Fatal(err)
	}
	for _, name := range GuardHooks {
		if b, err := os.ReadFile(filepath.Join(hooks, name)); err == nil {
			t.Fatalf("%s left: %q", name, b)
		}
	}
}
