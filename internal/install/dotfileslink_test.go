package install

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUninstallKeepsAFileParleyCreatedThatTheUserLinkedFromElsewhere:
// Parley created ~/.claude/settings.json; the user then moved it into
// their dotfiles repository and put a link in its place (the usual
// dotfiles way), changing nothing in it. Parley never creates a file
// through a link, so the file the link leads to is no longer the one
// Parley made where it made it: the uninstall takes Parley's entries out
// of it and keeps the file and the link. Before, it removed the file in
// the dotfiles repository, leaving the link leading to nothing, which the
// next install then refused.
func TestUninstallKeepsAFileParleyCreatedThatTheUserLinkedFromElsewhere(t *testing.T) {
	env := testEnv(t)
	mustInstall(t, env, opts(Claude, User))
	p := filepath.Join(env.Home, ".claude", "settings.json")
	dot := filepath.Join(env.Home, "dotfiles", "claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(dot), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p, dot); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dot, p); err != nil {
		t.Fatal(err)
	}
	mustUninstall(t, env, Claude, User)
	b, err := os.ReadFile(dot)
	if err != nil {
		t.Fatalf("the uninstall removed %s, which %s links to: %v", dot, p, err)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link %s is gone: %v", p, err)
	}
	if isClean(target{format: fmtJSON, hooks: map[string]jobj{}}, Claude, known{testBin}, b) == false {
		t.Fatalf("Parley's hooks are still in %s: %q", dot, b)
	}
	if _, err := Install(env, opts(Claude, User)); err != nil {
		t.Fatalf("install again: %v", err)
	}
}
