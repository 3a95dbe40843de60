package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// Regression: README, "An ask of an agent not in the room brings it in: it
// gets the ask alone, which says so". A terminal agent (`parley run`) asked
// in a room it was not in got two pastes, two turns: the invitation the ask
// made, which the wake service handed on as soon as the invite was stored,
// then the ask. The wake service now holds a new invitation a moment, and
// the ask that follows carries it: one paste.
func TestRunAskThatBringsATerminalAgentInIsPastedOnce(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	ta := startTerminalAgent(t, home, "fake")
	if _, errs, code := run(t, "--home", home, "room", "create", "ops"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	out, errs, code := run(t, "--home", home, "room", "ask", "ops", "which port?", "--to", "fake", "--wait", "45s")
	if code != 0 || !strings.Contains(out, "the port is 8080") {
		t.Fatalf("no answer from the terminal agent: exit %d: %s%s", code, out, errs)
	}
	// The agent printed "answered ID" for the ask, and "nothing to answer"
	// for any other line pasted in.
	var screen string
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		b, _ := exec.Command("tmux", "-S", ta.sock, "capture-pane", "-p", "-J", "-S", "-200", "-t", ta.pane).CombinedOutput()
		screen = string(b)
		return strings.Contains(screen, "answered ")
	}, "the agent to print its answer")
	if n := strings.Count(screen, "nothing to answer"); n != 0 {
		t.Fatalf("the agent was pasted into %d times besides the ask that brought it in; want the ask alone\nscreen:\n%s", n, strings.TrimSpace(screen))
	}
}
