package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `--home=~/parley-a` reaches parley with the tilde as it is (a shell
// expands ~ at the start of a word, not after `--home=`). The home is then
// the user's ~/parley-a, or the command is refused saying why; it made a
// folder named "~" in the working folder and a new node there, a folder
// the user then removes with `rm -rf ~`. Before, the home was the literal
// ./~/parley-a; now a leading ~/ is the user's home folder.
func TestCLIHomeTildeNotLiteral(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	fakeHome := t.TempDir()
	cmd := exec.Command(parleyBin, "--home=~/parley-a", "up", "-d", "--loopback")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+fakeHome)
	out, errs, code := runPrepared(t, cmd)
	if code == 0 {
		stop := exec.Command(parleyBin, "--home=~/parley-a", "down")
		stop.Dir = work
		stop.Env = cmd.Env
		runPrepared(t, stop)
	}
	if _, err := os.Stat(filepath.Join(work, "~")); err == nil {
		t.Fatalf("--home=~/parley-a made a folder named ~ in the working folder (exit %d, stdout %q, stderr %q)", code, out, errs)
	}
	if code == 0 && !strings.Contains(out, "home="+filepath.Join(fakeHome, "parley-a")) {
		t.Fatalf("--home=~/parley-a: the node runs at another home: %q", out)
	}
}
