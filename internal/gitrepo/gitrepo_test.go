package gitrepo

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Open(ctx, dir); !errors.Is(err, ErrNotRepo) {
		t.Fatalf("Open of a plain folder: %v", err)
	}
	run(t, dir, "init", "-q", "-b", "main")
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ProjectKey(ctx); !errors.Is(err, ErrNoCommit) {
		t.Fatalf("key without a commit: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "src", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "add", ".")
	run(t, dir, "commit", "-q", "-m", "first")
	key, err := r.ProjectKey(ctx)
	if err != nil || len(key) != 32 || CheckKey(key) != nil {
		t.Fatalf("key %q, %v", key, err)
	}
	// A clone has the same key.
	clone := filepath.Join(t.TempDir(), "clone")
	run(t, dir, "clone", "-q", dir, clone)
	run(t, clone, "commit", "-q", "--allow-empty", "-m", "second")
	rc, err := Open(ctx, filepath.Join(clone, "src"))
	if err != nil {
		t.Fatal(err)
	}
	if k2, err := rc.ProjectKey(ctx); err != nil || k2 != key {
		t.Fatalf("clone's key %q, %v; want %q", k2, err, key)
	}
	src := filepath.Join(dir, "src")
	for _, c := range []struct{ cwd, path, want string }{
		{dir, "src/a.go", "src/a.go"},
		{src, "a.go", "src/a.go"},
		{src, "new.go", "src/new.go"},
		{src, "*.go", "src/*.go"},
		{src, "sub", "src/sub/**"},
		{src, "later/", "src/later/**"},
		{src, "..", "**"},
		{dir, filepath.Join(dir, "src", "a.go"), "src/a.go"},
		{src, "**/*.go", "src/**/*.go"},
	} {
		got, err := r.Rel(c.cwd, c.path)
		if err != nil || got != c.want {
			t.Errorf("Rel(%s, %s) = %q, %v; want %q", c.cwd, c.path, got, err, c.want)
		}
	}
	for _, p := range []string{"../..", "/etc/passwd", "../../x", "", "../.git/config"} {
		if got, err := r.Rel(src, p); !errors.Is(err, ErrOutside) {
			t.Errorf("Rel(%q) = %q, %v; want ErrOutside", p, got, err)
		}
	}
	for _, k := range []string{"", "A", "-x", "a b", string(make([]byte, 65))} {
		if CheckKey(k) == nil {
			t.Errorf("CheckKey(%q) accepted", k)
		}
	}
}
