package wake_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/poll"
	"github.com/parley-mesh/parley/internal/wake"
	"github.com/parley-mesh/parley/internal/wake/tmux"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A terminal route that could not paste an item in its time (its agent
// worked past Config.Limit: Deliver gave up waiting for the idle prompt)
// has the human told, and pastes the item once its agent sits idle at its
// prompt, however long after: the terminal counts as tried for good only
// once it pasted. A terminal agent of `parley run` without hooks reads
// nothing else.
func TestTerminalPastesAnAskOnceItsAgentIsIdleAfterTheLimit(t *testing.T) {
	needTmux(t)
	f := newFixture(t, 2*time.Second)
	srv := tmux.Server{Name: fmt.Sprintf("parley-retry-%d-%d", os.Getpid(), time.Now().UnixNano()), Config: "/dev/null"}
	t.Cleanup(func() { srv.KillServer(context.Background()) }) //nolint:errcheck // gone already is fine
	script, err := filepath.Abs(filepath.Join("tmux", "testdata", "fakeagent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	taken := filepath.Join(t.TempDir(), "taken")
	// Works (output every 100 ms) for 6 s, three times the route's limit,
	// then waits at its prompt.
	busy := fmt.Sprintf("i=0; while [ $i -lt 60 ]; do echo working $i; i=$((i+1)); sleep 0.1; done; exec %q", script)
	pane, err := srv.Start(f.ctx, tmux.StartOptions{Command: []string{"sh", "-c", busy},
		Env: []string{"FAKE_LOG=" + taken, "FAKE_WORK=0.05", "INPUTRC=/dev/null"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID, Prompt: "> "}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, f.routes("terminal"), "the terminal route")
	f.ask("are you free after your task?")
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		sc, err := srv.Capture(f.ctx, pane.ID)
		return err == nil && sc.CursorLine() == ">"
	}, "the agent to finish its work and wait at its prompt")
	if !poll.Until(20*time.Second, func() bool {
		b, _ := os.ReadFile(taken)
		return strings.Contains(string(b), "are you free after your task?")
	}) {
		sc, _ := srv.Capture(f.ctx, pane.ID)
		t.Fatalf("the agent has been idle at its prompt for 20 s and the ask it owes was never pasted (unreached: %d); the pane:\n%s",
			f.status().Unreached, sc.Text())
	}
	if n := len(f.log.lines("tell its human")); n != 1 {
		t.Fatalf("the human was told %d times, want once (when the terminal's turn ran out)", n)
	}
}

// A person who scrolls the pane up (copy mode) just as a wake text is
// pasted keeps the pane as they left it (Deliver sends no Enter, which
// would end the mode and leave the text unsent: tmux.ErrNotSent): the item
// is not pasted again while the text sits at the prompt, the human is told
// as for a draft, and once the person leaves copy mode and clears the line
// the terminal pastes the item.
func TestTerminalLeavesThePaneToAPersonInCopyMode(t *testing.T) {
	needTmux(t)
	f, ta := copyModeAfterPaste(t)
	id := f.ask("is the build green?")
	nodetest.WaitFor(t, 20*time.Second, f.unreached(1), "the human to be told\n%s", f.log)
	// The human is told once the route's limit has passed since the item
	// was handed to it, by a recheck of the service's, whether or not the
	// route has come back from its paste (which may end past the limit: the
	// Enter's check gets a time of its own): wait for the route's line.
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(f.log.lines("left unsent at the prompt")) > 0 },
		"the route to log the text left unsent\n%s", f.log)
	if n := len(f.log.lines("left unsent at the prompt")); n != 1 {
		t.Fatalf("the text was left at the prompt %d times, want once\n%s", n, f.log)
	}
	sc, err := ta.srv.Capture(f.ctx, ta.pane.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ta.taken); len(b) != 0 || !sc.InMode {
		t.Fatalf("the Enter went to the pane (in mode %v; the agent read %q):\n%s", sc.InMode, b, sc.Text())
	}
	if err := ta.srv.SendKeys(f.ctx, ta.pane.ID, "-X", "cancel"); err != nil {
		t.Fatal(err)
	}
	ta.keys("C-u")
	nodetest.WaitFor(t, 20*time.Second, func() bool { b, _ := os.ReadFile(ta.taken); return strings.Contains(string(b), id) },
		"the ask to be pasted once the line is cleared\n%s", f.log)
}

// copyModeAfterPaste returns a fixture whose fake agent's pane a person
// puts in copy mode just after tmux's first paste-buffer into it, once.
func copyModeAfterPaste(t *testing.T) (*fixture, fakeTerm) {
	t.Helper()
	cmd := filepath.Join(t.TempDir(), "person")
	bin, _ := tmuxWrapper(t, "if [ -e '"+cmd+"' ]; then\n  case \" $* \" in *\" paste-buffer \"*)\n"+
		"    tmux \"$@\"; rc=$?; sh '"+cmd+"'; rm -f '"+cmd+"'; exit $rc ;;\n  esac\nfi")
	f := newFixture(t, 2*time.Second, func(f *fixture, c *wake.Config) { c.TmuxBin, c.PaneCheck = bin, 50*time.Millisecond })
	ta := f.fakeAgent("0.05")
	scroll := fmt.Sprintf("tmux -L %s -f /dev/null copy-mode -t %s\n", ta.srv.Name, ta.pane.ID)
	if err := os.WriteFile(cmd, []byte(scroll), 0o600); err != nil {
		t.Fatal(err)
	}
	return f, ta
}
