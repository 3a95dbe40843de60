package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runIn runs parley as the user u with dir as the working folder (PWD
// too, so that a folder reached through a link keeps its name).
func (u userDirs) runIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(parleyBin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + u.home, "PWD=" + dir, "PATH=" + os.Getenv("PATH"), "GORACE=" + os.Getenv("GORACE")}, u.env...)
	return runPrepared(t, cmd)
}

// Before, `parley install claude --project` run in the home folder (a new
// terminal's working folder) took ~/.claude/settings.json, the user's own
// settings, for the project's and rewrote its hooks as a project install,
// and `parley doctor` there read a clean user install as a broken project
// install (exit 1); now a project scope whose files are the user's own
// config (the home folder, reached directly, through a link, or with
// --dir; a project whose .codex is CODEX_HOME) is refused, with what to
// run instead, nothing is changed, and doctor checks no project there.
func TestCLIInstallProjectInTheHomeFolderIsRefused(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	for _, c := range []string{"claude", "codex", "gemini"} {
		if out, errs, code := u.runIn(t, u.home, "install", c); code != 0 {
			t.Fatalf("install %s: exit %d\n%s\n%s", c, code, out, errs)
		}
	}
	settings := filepath.Join(u.home, ".claude", "settings.json")
	before := clientFiles(t, u.home)
	link := filepath.Join(t.TempDir(), "home-link")
	if err := os.Symlink(u.home, link); err != nil {
		t.Fatal(err)
	}
	refused := func(dir string, args ...string) {
		t.Helper()
		out, errs, code := u.runIn(t, dir, args...)
		if code == 0 || !strings.Contains(errs, "no project here") || !strings.Contains(errs, "without --project") || !strings.Contains(errs, "--dir") {
			t.Errorf("%v in %s: exit %d, want a refusal naming what to run instead\nstdout: %s\nstderr: %s", args, dir, code, out, errs)
		}
	}
	for _, c := range []string{"claude", "codex", "gemini", "opencode"} {
		refused(u.home, "install", c, "--project")
		refused(u.home, "install", c, "--project", "--dry-run")
		refused(link, "install", c, "--project")
		refused(u.project, "install", c, "--project", "--dir", link)
		refused(u.home, "uninstall", c, "--project")
	}
	if after := clientFiles(t, u.home); !maps.Equal(before, after) {
		t.Errorf("a refused install changed the home folder (%s among them):\nbefore %v\nafter  %v", settings, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
	// doctor in the home folder: the user installs, no project.
	for _, dir := range []string{u.home, link} {
		out, errs, code := u.runIn(t, dir, "doctor")
		if code != 0 || strings.Contains(out, "(project)") || strings.Contains(out, "FAIL") {
			t.Errorf("doctor in %s: exit %d\n%s\n%s", dir, code, out, errs)
		}
	}

	// CODEX_HOME is the project's .codex: the project's Codex files are
	// the user's.
	w := u
	w.env = append(w.env, "CODEX_HOME="+filepath.Join(u.project, ".codex"))
	out, errs, code := w.runIn(t, u.project, "install", "codex", "--project")
	if code == 0 || !strings.Contains(errs, "CODEX_HOME") || !strings.Contains(errs, "without --project") {
		t.Errorf("install codex --project with CODEX_HOME=project/.codex: exit %d\n%s\n%s", code, out, errs)
	}
	// Another client's project install there is a project's.
	if out, errs, code := w.runIn(t, u.project, "install", "claude", "--project", "--dry-run"); code != 0 {
		t.Errorf("install claude --project --dry-run in the project: exit %d\n%s\n%s", code, out, errs)
	}
}

// clientFiles is snapshotFiles of the home folder without Parley's home.
func clientFiles(t *testing.T, home string) map[string]string {
	t.Helper()
	m := snapshotFiles(t, home)
	maps.DeleteFunc(m, func(p, _ string) bool {
		return strings.HasPrefix(p, filepath.Join(home, ".parley")+string(filepath.Separator))
	})
	return m
}

// A project install whose parley is not on PATH says so, and names the
// folder of the parley that ran, to put on PATH. Found in a README
// walk-through: after `go install ./cmd/parley` (GOPATH/bin not on PATH)
// it said to run `go install ./cmd/parley`, which had been done.
func TestCLIInstallProjectNamesTheFolderToPutOnPath(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "parley")); err != nil && d != filepath.Dir(parleyBin) {
			path = append(path, d) // a PATH without any parley
		}
	}
	cmd := exec.Command(parleyBin, "install", "claude", "--project")
	cmd.Dir = u.project
	cmd.Env = []string{"HOME=" + u.home, "PWD=" + u.project, "PATH=" + strings.Join(path, string(os.PathListSeparator)), "GORACE=" + os.Getenv("GORACE")}
	out, errs, code := runPrepared(t, cmd)
	want := `export PATH="$PATH:` + filepath.Dir(parleyBin) + `"`
	if code != 0 || !strings.Contains(out+errs, "parley is not on your PATH") || !strings.Contains(out+errs, want) {
		t.Fatalf("install claude --project with parley off PATH: exit %d, want a note naming %s\nstdout: %s\nstderr: %s", code, want, out, errs)
	}
}
