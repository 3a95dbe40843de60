//go:build unix

package testnet

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// holdEnv makes TestKilledRunsFolderIsRemovedByTheNext, run again as a
// process of its own, a run that holds its folder until its stdin closes.
const holdEnv = "PARLEY_TESTNET_HOLD_RUN_DIR"

// TestKilledRunsFolderIsRemovedByTheNext: a run killed with SIGKILL (its
// node processes die with it, by Pdeathsig) cannot remove its temporary
// folder; the next run finds it by its lock, which no process holds any
// more, and removes it. A live run's folder (its lock held) and a folder
// named ptn… that is no run's (no lock file) are left. Before, the killed
// run's folder stayed for good.
func TestKilledRunsFolderIsRemovedByTheNext(t *testing.T) {
	if os.Getenv(holdEnv) != "" {
		holdRunDir(t)
		return
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	killed, killedDir := startRunDirHolder(t)
	_, liveDir := startRunDirHolder(t)
	foreign := filepath.Join(tmp, "ptn-not-a-run")
	if err := os.MkdirAll(filepath.Join(foreign, "s1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	if _, err := os.Stat(filepath.Join(killedDir, "s1", "home")); err != nil {
		t.Fatalf("the killed run's folder is not there before the next run: %v", err)
	}
	if _, err := Run(context.Background(), Config{Mode: Mocknet, Scenarios: []string{"restart"}, Duration: time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(killedDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's folder is still there: %v", err)
	}
	for _, d := range []string{liveDir, foreign} {
		if _, err := os.Stat(filepath.Join(d, "s1")); err != nil {
			t.Errorf("%s was touched: %v", d, err)
		}
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{filepath.Base(liveDir), filepath.Base(foreign)}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("$TMPDIR holds %v after the run, want %v", names, want)
	}
}

// startRunDirHolder starts this test again as a process that makes a run's
// folder and holds it, and returns the process and the folder; the process
// ends (and removes its folder) at the test's end.
func startRunDirHolder(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledRunsFolderIsRemovedByTheNext$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	dirc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "RUN DIR "); ok {
				dirc <- d
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case d := <-dirc:
		return cmd, d
	case <-time.After(30 * time.Second):
		t.Fatal("the holding process did not say its folder in 30 s")
		return nil, ""
	}
}

// holdRunDir is the holding process: a run's folder with a node home in
// it, held until stdin closes.
func holdRunDir(t *testing.T) {
	dir, done, err := makeRunDir()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if err := os.MkdirAll(filepath.Join(dir, "s1", "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("RUN DIR " + dir + "\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
}
