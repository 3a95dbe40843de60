package install

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitGuardRefusesAReadOnlyHook: before, a config file whose owner may
// not write it was refused (ErrReadOnly), but a read-only git hook (chmod
// a-w, a hook a team keeps fixed) was rewritten all the same, the rename
// going round its mode; now install and uninstall of the guard refuse it
// too.
func TestGitGuardRefusesAReadOnlyHook(t *testing.T) {
	base := t.TempDir()
	env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
	hooks := filepath.Join(base, "repo", ".git", "hooks")
	path := filepath.Join(hooks, "pre-commit")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	orig := "#!/bin/sh\nexec make lint\n"
	if err := os.WriteFile(path, []byte(orig), 0o555); err != nil {
		t.Fatal(err)
	}
	p, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil)
	if err == nil {
		err = p.Apply()
	}
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("install into a read-only hook: err = %v, want ErrReadOnly", err)
	}
	if got := string(mustRead(t, path)); got != orig {
		t.Errorf("the read-only hook was rewritten:\n%s", got)
	}
}

// TestInstallRefusesAFileTheUserCannotWrite: before, writable() looked only
// at the owner's write bit, so a config file owned by someone else (root:
// an admin's fixed settings, mode 0644) in a folder the user owns passed,
// and the rename replaced a file the user could not have written; now
// writable also asks the system whether this user may write the file, and
// install refuses it (ErrReadOnly).
func TestInstallRefusesAFileTheUserCannotWrite(t *testing.T) {
	const nobody = 65534
	if os.Getenv("PARLEY_REVIEW_AS_NOBODY") == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root, to run the install as another user")
		}
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("needs setpriv")
		}
		base, err := os.MkdirTemp("", "parley-review-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		home := filepath.Join(base, "home")
		settings := filepath.Join(home, ".gemini", "settings.json")
		if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
			t.Fatal(err)
		}
		orig := "{\n  \"theme\": \"dark\"\n}\n"
		if err := os.WriteFile(settings, []byte(orig), 0o644); err != nil { // root's: nobody may not write it
			t.Fatal(err)
		}
		// The folders are the user's own.
		for _, d := range []string{home, filepath.Dir(settings)} {
			if err := os.Chown(d, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
			os.Args[0], "-test.run", "^TestInstallRefusesAFileTheUserCannotWrite$", "-test.v")
		cmd.Env = append(os.Environ(), "PARLEY_REVIEW_AS_NOBODY="+base, "HOME="+home, "GOCACHE=/nonexistent")
		out, err := cmd.CombinedOutput()
		t.Logf("as nobody: %v\n%s", err, out)
		if got := string(mustRead(t, settings)); got != orig {
			t.Errorf("a file the user may not write was replaced:\n%s", got)
		}
		return
	}
	// As nobody.
	base := os.Getenv("PARLEY_REVIEW_AS_NOBODY")
	env := Env{Home: filepath.Join(base, "home"), ParleyHome: filepath.Join(base, "home", ".parley")}
	p, err := Install(env, Options{Client: Gemini, Scope: User, Command: testBin, Hooks: HookEvents[Gemini]})
	if err == nil {
		err = p.Apply()
	}
	if err == nil || !strings.Contains(err.Error(), "settings.json") {
		t.Errorf("install over a file this user may not write: err = %v, want a refusal", err)
	}
}
