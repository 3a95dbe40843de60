package install

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGitGuardRefusesACompiledHook: a hook that is a compiled program (no
// #! line: git runs it as it is) is no shell script. Before, install put
// the guard's shell lines in front of its bytes: the system could no
// longer run the file, git handed it to sh, which ran the lines and then
// read the program's bytes as shell, so every commit failed and the
// user's hook never ran. Install refuses it, writing nothing.
func TestGitGuardRefusesACompiledHook(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true program")
	}
	prog, err := os.ReadFile(truePath)
	if err != nil || !bytes.Contains(prog, []byte{0}) {
		t.Skipf("%s is not a compiled program: %v", truePath, err)
	}
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	gitEnv := append(os.Environ(), "HOME="+base, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(git, args...)
		cmd.Dir = repo
		cmd.Env = gitEnv
		return cmd.CombinedOutput()
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := run("init", "-q"); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	hooks := filepath.Join(repo, ".git", "hooks")
	path := filepath.Join(hooks, "pre-commit")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, prog, 0o755); err != nil {
		t.Fatal(err)
	}
	// The user's hook works: commits go through.
	if out, err := run("commit", "-q", "--allow-empty", "-m", "one"); err != nil {
		t.Fatalf("commit with the user's own hook: %v %s", err, out)
	}
	env := Env{Home: base, ProjectDir: repo, ParleyHome: filepath.Join(base, "parley")}
	p, err := InstallGitGuard(env, hooks, "/usr/bin/parley", nil)
	if err == nil {
		if aerr := p.Apply(); aerr == nil {
			out, cerr := run("commit", "-q", "--allow-empty", "-m", "two")
			t.Fatalf("install took the compiled hook %s; a commit then: err %v, %s", truePath, cerr, out)
		}
	}
	if !errors.Is(err, ErrNotShell) {
		t.Fatalf("install into a compiled hook: %v, want ErrNotShell", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, prog) {
		t.Fatal("the hook changed")
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-merge-commit")); !os.IsNotExist(err) {
		t.Fatalf("a hook was written: %v", err)
	}
}
