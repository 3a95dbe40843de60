package install

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
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

// TestGitGuardRefusesACRLFHook: a hook with CRLF line endings is one git
// cannot run (its #! line names a program ending in \r; a shell reads the
// \r into each command): install refuses it with the fix, and writes
// nothing.
func TestGitGuardRefusesACRLFHook(t *testing.T) {
	for _, before := range []string{"#!/bin/bash\r\nmake lint\r\n", "make lint\r\n"} {
		base := t.TempDir()
		env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
		hooks := filepath.Join(base, "repo", ".git", "hooks")
		writeHook(t, filepath.Join(hooks, "pre-commit"), before)
		_, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil)
		if !errors.Is(err, ErrNotShell) || !strings.Contains(err.Error(), "CRLF") || !strings.Contains(err.Error(), "dos2unix") {
			t.Fatalf("install into %q: %v", before, err)
		}
		if got, _ := os.ReadFile(filepath.Join(hooks, "pre-commit")); string(got) != before {
			t.Fatalf("the hook changed: %q", got)
		}
		if _, err := os.Stat(filepath.Join(hooks, "pre-merge-commit")); !os.IsNotExist(err) {
			t.Fatalf("a hook was written: %v", err)
		}
	}
}

// TestGitGuardRefusesAHardLinkedHook: a hook with another name (a hard
// link) is refused: a replace would part the names.
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
	_, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil)
	if !errors.Is(err, ErrHardLinked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("install into a hard-linked hook: %v", err)
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
