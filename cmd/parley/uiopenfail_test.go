package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `parley ui --open` with an opener that fails (xdg-open on a machine
// with no browser or no display exits 3 at once) says the browser was not
// opened, and exits non-zero, rather than exit 0 as if the dashboard were
// on screen. Before, it exited 0; now it waits up to 2s for the opener
// and reports its failure.
func TestCLIUIOpenFailingOpener(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	bin := t.TempDir()
	opener := "#!/bin/sh\necho 'xdg-open: no method available for opening' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(opener), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(parleyBin, "--home", home, "ui", "--open")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, errs, code := runPrepared(t, cmd)
	if code == 0 {
		t.Fatalf("ui --open with an opener that failed (exit 3): exit 0, stdout %q, stderr %q; want a failure saying the browser was not opened", out, errs)
	}
	if !strings.Contains(errs, "open") {
		t.Fatalf("ui --open with a failing opener: exit %d, stderr %q", code, errs)
	}
}
