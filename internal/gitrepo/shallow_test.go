package gitrepo

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestShallowCloneIsNotAnotherProject: a shallow clone (git clone
// --depth N, as CI and agents' sandboxes often make) lacks the root
// commit, and git names the commits at its depth as roots. The project
// key made from them is not the project's: its agents would claim on a
// board of their own, and its guard check commits against it. The key is
// refused there, saying how to name the project instead.
func TestShallowCloneIsNotAnotherProject(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	for _, m := range []string{"first", "second", "third"} {
		run(t, dir, "commit", "-q", "--allow-empty", "-m", m)
	}
	full, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	key, err := full.ProjectKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "shallow")
	run(t, dir, "clone", "-q", "--depth", "1", "file://"+dir, clone)
	r, err := Open(ctx, clone)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := r.ProjectKey(ctx)
	if k2 != "" && k2 != key {
		t.Fatalf("the shallow clone's key %q is not the project's %q", k2, key)
	}
	if !errors.Is(err, ErrShallow) {
		t.Fatalf("the shallow clone's key: %q, %v; want ErrShallow", k2, err)
	}
	// A key given by hand is used there.
	if k, _, err := Project(ctx, clone, key, nil); err != nil || k != key {
		t.Fatalf("the key given in the shallow clone: %q, %v", k, err)
	}
	// Made whole again, it has the project's key.
	run(t, clone, "fetch", "-q", "--unshallow")
	if k3, err := r.ProjectKey(ctx); err != nil || k3 != key {
		t.Fatalf("the unshallowed clone's key %q, %v; want %q", k3, err, key)
	}
}
