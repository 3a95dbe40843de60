package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIInstallNamesTheProgramByItsLinkOnPath: parley installed by a
// package manager is a link on PATH to a file in a versioned folder
// (Homebrew's bin/parley -> ../Cellar/parley/1.0/bin/parley; a nix
// profile's link into the store). Before, install wrote the versioned
// file's path into the client's config (os.Executable gives the file the
// link leads to), so the first upgrade, which removes that folder, left
// the client's MCP server and hooks naming a program that is gone. The
// config names the link found on PATH when it is this very program.
func TestCLIInstallNamesTheProgramByItsLinkOnPath(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	root := t.TempDir()
	cellar := filepath.Join(root, "Cellar", "parley", "1.0", "bin", "parley")
	if err := os.MkdirAll(filepath.Dir(cellar), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(parleyBin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(cellar, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(bin, "parley")
	if err := os.Symlink(filepath.Join("..", "Cellar", "parley", "1.0", "bin", "parley"), link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "install", "claude")
	cmd.Dir = u.project
	cmd.Env = []string{"HOME=" + u.home, "PATH=" + bin + string(filepath.ListSeparator) + os.Getenv("PATH"), "GORACE=" + os.Getenv("GORACE")}
	out, errs, code := runPrepared(t, cmd)
	if code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, out, errs)
	}
	cfg := readAll(t, filepath.Join(u.home, ".claude.json"))
	if strings.Contains(cfg, "Cellar") || !strings.Contains(cfg, `"command": "`+link+`"`) {
		t.Fatalf("~/.claude.json names the versioned file, which an upgrade removes, not %s:\n%s", link, cfg)
	}
	settings := readAll(t, filepath.Join(u.home, ".claude", "settings.json"))
	if strings.Contains(settings, "Cellar") || !strings.Contains(settings, link+" hook claude") {
		t.Fatalf("~/.claude/settings.json's hooks name the versioned file, not %s:\n%s", link, settings)
	}
}
