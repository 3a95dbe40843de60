package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// A backup killed outright (SIGKILL, a power cut: no Ctrl-C to clean up
// after) leaves its part-written copy, whose first bytes are the node's
// private key, under a hidden name beside FILE. The next backup to FILE
// removes it; a part another backup is still writing is left alone.
// Before, such a copy stayed in the folder for good.
func TestCLIBackupKilledLeavesNoKeyForGood(t *testing.T) {
	t.Parallel()
	home := stalledBackupNode(t, "pbk")
	dir := t.TempDir()
	file := filepath.Join(dir, "node.backup")
	partials := func() []string {
		var out []string
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if info, err := e.Info(); err == nil && info.Size() > 0 && strings.HasPrefix(e.Name(), ".node.backup.partial-") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(parleyBin, "--home", home, "backup", file)
		must(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck // it may have ended
		return cmd
	}
	first := start()
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(partials()) == 1 }, "the first backup to write its first bytes")
	killed := partials()[0]
	must(t, first.Process.Signal(syscall.SIGKILL))
	first.Wait() //nolint:errcheck // killed
	if got := partials(); len(got) != 1 || got[0] != killed {
		t.Fatalf("after the kill: %v", got)
	}

	// A second backup runs (and is still copying): the killed one's part
	// goes.
	second := start()
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		got := partials()
		return len(got) == 1 && got[0] != killed
	}, "the second backup to write its part and remove the killed one's (%v)", partials())

	// A third one to the same FILE meanwhile leaves the second's part,
	// which is still being written, alone.
	third := start()
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(partials()) == 2 }, "the third backup to write its part beside the second's (%v)", partials())
	for _, c := range []*exec.Cmd{second, third} {
		must(t, c.Process.Signal(os.Interrupt))
		c.Wait() //nolint:errcheck // interrupted
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left in the folder: %v", ents)
	}
}
