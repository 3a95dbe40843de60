package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// R4: `parley agent unregister` of a `parley run` agent is undone by the
// next node restart: the pane's kept route (t/<agent>) is not dropped, so
// the restarted node binds its session again and re-registers the agent,
// and pastes into its pane again.
func TestR4UnregisteredRunAgentStaysGoneAfterRestart(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d: exit %d\n%s\n%s", code, out, errs)
	}
	t.Cleanup(func() { run(t, "--home", home, "down") })
	startTerminalAgent(t, home, "fake")
	if _, errs, code := run(t, "--home", home, "agent", "unregister", "fake"); code != 0 {
		t.Fatalf("unregister: %s", errs)
	}
	if listed(t, home, "fake") {
		t.Fatal("listed after unregister")
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d again: exit %d\n%s\n%s", code, out, errs)
	}
	c := localapi.NewClient(node.SocketPath(home))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Restore runs right after start: wait until the node has logged its
	// verdict on the kept route (taken up, or not), then look.
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		log, _ := os.ReadFile(filepath.Join(home, "node.log"))
		return strings.Count(string(log), "terminal wake-up route taken up again")+strings.Count(string(log), "terminal wake-up route not taken up again") > 0
	}, "the restarted node to look at the kept route")
	st, err := c.WakeStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range st {
		if w.Agent == "fake" && slices.Contains(w.Routes, localapi.WakeTerminal) {
			t.Errorf("the restarted node pastes into the unregistered agent's pane again")
		}
	}
	if listed(t, home, "fake") {
		t.Errorf("the agent unregistered before the restart is registered again")
	}
}

// R4: down against a node that is started again as the old one exits (a
// `parley run`, `parley codex` or a supervisor starting one; here a
// process that takes the home's lock the moment it is let go, as the next
// node does): the node down stopped has exited, yet down waits its whole
// 20 s and fails saying the node "has not exited", because it waits for
// the lock to be free rather than for the node it stopped.
func TestR4DownWhileANewNodeTakesTheHome(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	home := filepath.Join(t.TempDir(), "a")
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d: exit %d\n%s\n%s", code, out, errs)
	}
	raw, err := os.ReadFile(filepath.Join(home, node.LockFileName))
	if err != nil {
		t.Fatal(err)
	}
	next := exec.Command("flock", "-x", filepath.Join(home, node.LockFileName), "sleep", "60")
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { next.Process.Kill(); next.Wait() }) //nolint:errcheck // ours, ending
	start := time.Now()
	_, errs, code := run(t, "--home", home, "down")
	took := time.Since(start)
	if code != 0 || took > 10*time.Second {
		t.Fatalf("down of node pid %s while the next one takes the home: exit %d after %s\n%s", strings.TrimSpace(string(raw)), code, took.Round(time.Second), errs)
	}
}

// R4: a `parley run` agent whose program exits while the node is down is
// not let go when the node comes back: Restore drops the pane's route, but
// the agent's registration (loaded from the database, TTL 60 s) stays, and
// asks to it are taken for nobody. README: "When the program exits, the
// agent is unregistered within 2 s and asks to it are refused".
func TestR4ProgramExitedWhileNodeDownIsLetGo(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d: exit %d\n%s\n%s", code, out, errs)
	}
	t.Cleanup(func() { run(t, "--home", home, "down") })
	ta := startTerminalAgent(t, home, "fake")
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	if out, err := exec.Command("tmux", "-S", ta.sock, "kill-pane", "-t", ta.pane).CombinedOutput(); err != nil {
		t.Fatalf("kill-pane: %v %s", err, out)
	}
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d again: exit %d\n%s\n%s", code, out, errs)
	}
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		log, _ := os.ReadFile(filepath.Join(home, "node.log"))
		return strings.Contains(string(log), "terminal wake-up route not taken up again")
	}, "the restarted node to drop the dead pane's route")
	if !nodetest.Poll(5*time.Second, func() bool { return !listed(t, home, "fake") }) {
		t.Fatal("the agent whose program exited while the node was down is still registered 5 s after the node dropped its pane")
	}
}
