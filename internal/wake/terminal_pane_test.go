package wake_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/wake"
	"github.com/parley-mesh/parley/node/nodetest"
)

// The agent's pane is respawned with another program (tmux respawn-pane
// -k: same pane ID, a new first process) that happens to show the same
// prompt. The route must not paste a stranger's ask into that program: the
// pane no longer runs the agent the route was made for (Restore checks the
// pane's first process; a live route must too). Before, the live route
// never checked the pane's first process and pasted the ask into the new
// program; now its looks and its paste find the other process and end the
// route as gone.
func TestWakeTerminalPastesIntoTheProgramThatReplacedTheAgent(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Hour, heartbeaten, letGo)
	ta := f.fakeAgent("0.05")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")

	script, err := filepath.Abs(filepath.Join("tmux", "testdata", "fakeagent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	// Another program, not the agent, in the same pane.
	ta.tmux("respawn-pane", "-k", "-t", ta.pane.ID, "-e", "FAKE_LOG="+other, "-e", "INPUTRC=/dev/null", script)
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		st, err := ta.srv.Inspect(f.ctx, ta.pane.ID)
		return err == nil && st.PID != ta.pane.PID
	}, "the pane to run another program")
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		sc, err := ta.srv.Capture(f.ctx, ta.pane.ID)
		return err == nil && sc.CursorLine() == ">"
	}, "the other program's prompt")

	// The route's look may have ended it, and let the agent go, before
	// the ask: then the ask is refused, which is as good.
	var got bool
	if r, err := f.n.Inbox().Ask(f.ctx, "human", localapi.AskRequest{Room: f.room, Text: "what is the deploy key?", To: "bot"}); err == nil {
		nodetest.Poll(30*time.Second, func() bool {
			b, _ := os.ReadFile(other)
			got = strings.Contains(string(b), r.AskID)
			return got || f.routes()()
		})
	}
	if got {
		b, _ := os.ReadFile(other)
		t.Fatalf("the ask was pasted into the program that replaced the agent in pane %s (pid %d, was %d):\n%s",
			ta.pane.ID, mustPID(t, ta), ta.pane.PID, b)
	}
	if f.registered("bot") {
		t.Fatalf("the agent stays registered on a pane that no longer runs it\n%s", f.log)
	}
}

func mustPID(t *testing.T, ta fakeTerm) int {
	t.Helper()
	st, err := ta.srv.Inspect(context.Background(), ta.pane.ID)
	if err != nil {
		return 0
	}
	return st.PID
}

// A tmux call fails for a reason that says nothing of the pane (here, the
// tmux client was upgraded and no longer speaks the running server's
// protocol, as after a package upgrade): the pane and its agent are still
// there, so the route must stay and the agent must not be let go. The
// route's look ends it on any error as if the pane were gone. Before, the
// route's look ended it, and let the agent go, on any tmux error; now only
// an error that says the pane is gone does, and another is logged and the
// next look tries again.
func TestWakeTerminalRouteSurvivesATmuxErrorThatSaysNothingOfThePane(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	armed, calls := filepath.Join(dir, "armed"), filepath.Join(dir, "calls")
	bin, _ := tmuxWrapper(t, "if [ -e '"+armed+"' ]; then echo x >> '"+calls+"'; echo 'protocol version mismatch (client 8, server 7)' >&2; exit 1; fi")
	f := newFixture(t, time.Hour, heartbeaten, letGo, func(f *fixture, c *wake.Config) { c.TmuxBin = bin })
	f.fakeAgent("0.05")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")

	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Several looks fail (the route looks every 50 ms).
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "x") >= 3 || f.routes()()
	}, "three failed looks")
	if err := os.Remove(armed); err != nil {
		t.Fatal(err)
	}
	if !f.routes("terminal")() {
		t.Fatalf("a tmux error that says nothing of the pane ended the terminal route\n%s", f.log)
	}
	if !f.registered("bot") {
		t.Fatalf("a tmux error that says nothing of the pane let the agent go\n%s", f.log)
	}
	if len(f.kept()) != 1 {
		t.Fatalf("a tmux error that says nothing of the pane dropped the kept route: %+v", f.kept())
	}
}

// The node starts where tmux is not on its PATH (a service manager's
// environment), or tmux is being upgraded: Restore cannot look at the kept
// panes, which says nothing of whether they still run their agents. The
// kept routes must stay for a start that can look, and their agents must
// not be let go. Before, Restore dropped the kept routes and let their
// agents go on any tmux error; now it drops them only when the pane is
// gone, its program exited or is another, or the socket is not this
// user's, and keeps them otherwise.
func TestWakeRestoreKeepsRoutesWhenTmuxCannotBeRun(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Hour, letGo, func(f *fixture, c *wake.Config) {
		c.TmuxBin = filepath.Join(t.TempDir(), "no-tmux-here")
	})
	ta := f.fakePane("0.05")
	saved := wake.Saved{Agent: "bot", Session: "s1", Socket: ta.pane.Socket, Pane: ta.pane.ID, PID: ta.pane.PID, Prompt: "> "}
	if err := f.terms.SaveTerminal(saved); err != nil {
		t.Fatal(err)
	}
	rebind := func(context.Context, string) (string, error) { return "bot", nil }
	rctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	n, err := f.s.Restore(rctx, rebind)
	t.Logf("restore: %d, %v", n, err)
	if _, ok := f.kept()["bot"]; !ok {
		t.Fatalf("a kept route was dropped because tmux could not be run\n%s", f.log)
	}
	if !f.registered("bot") {
		t.Fatalf("an agent was let go because tmux could not be run\n%s", f.log)
	}
}

// A person scrolls the pane up just as a wake text is pasted (the route
// leaves the line to them: tmux.ErrNotSent), then leaves copy mode and
// sends the line themselves. The agent has read the ask; the route must
// not paste it into the pane a second time once the agent is idle again.
// Before, the item was handed again at the next idle look and pasted
// twice; now the route's first look at an empty prompt after the line was
// left unsent finds the line still on the screen above it, and counts the
// item as pasted.
func TestWakeTerminalPastesAgainWhatAPersonSent(t *testing.T) {
	needTmux(t)
	f, ta := copyModeAfterPaste(t)
	const q = "is the build green?"
	f.ask(q)
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(f.log.lines("left unsent at the prompt")) > 0 },
		"the route to leave the text unsent\n%s", f.log)
	// The person leaves copy mode and sends the line.
	if err := ta.srv.SendKeys(f.ctx, ta.pane.ID, "-X", "cancel"); err != nil {
		t.Fatal(err)
	}
	ta.keys("Enter")
	nodetest.WaitFor(t, 20*time.Second, func() bool { b, _ := os.ReadFile(ta.taken); return strings.Count(string(b), q) >= 1 },
		"the agent to read the line the person sent")
	// Idle at its prompt again, for several of the route's limits.
	sent := time.Now()
	nodetest.Poll(8*time.Second, func() bool {
		b, _ := os.ReadFile(ta.taken)
		return strings.Count(string(b), q) > 1 || time.Since(sent) > 6*time.Second
	})
	if b, _ := os.ReadFile(ta.taken); strings.Count(string(b), q) != 1 {
		t.Fatalf("the agent was given the ask %d times:\n%s", strings.Count(string(b), q), b)
	}
}
