package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parley org init writes a key file of its own (mode 0600), never over
// another, and refuses one that others can read.
func TestCLIOrgKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "acme.orgkey")
	out, errs, code := run(t, "org", "init", "Acme", "--key", key)
	if code != 0 || !strings.Contains(out, "ORGKEY 12D3KooW") {
		t.Fatalf("org init: %d %q %q", code, out, errs)
	}
	fi, err := os.Stat(key)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	if _, errs, code := run(t, "org", "init", "Acme", "--key", key); code == 0 || !strings.Contains(errs, "never overwritten") {
		t.Fatalf("second init: %d %q", code, errs)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if _, errs, code := run(t, "--home", home, "org", "add", "12D3KooWDpg8uJ23WCMp3pC5in3VfXd9rUnP3jSnY32zU88w3CiC", "--key", key); code == 0 || !strings.Contains(errs, "readable by others") {
		t.Fatalf("add with a loose key: %d %q", code, errs)
	}
}
