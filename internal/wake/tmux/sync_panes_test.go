package tmux

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A window whose panes are synchronized (synchronize-panes on: tmux gives
// every key pressed in one of them to all) holds the agent's pane and a
// person's own pane, where a command waits half typed. tmux's send-keys
// presses a key the way a person does, so an Enter sent with it to the
// agent's pane reaches every pane of such a window: a wake-up, which any
// contact's ask makes, would run the person's half-typed command. The
// paste goes to the agent's pane alone, and so must its Enter.
func TestDeliverPressesEnterInTheAgentsPaneAlone(t *testing.T) {
	s := newServer(t)
	a := startAgent(t, s, "0.05", StartOptions{Session: "agent"})
	term := a.bind(t, Options{})
	ctx := testCtx(t, 30*time.Second)

	// The person's pane, beside the agent's in its window.
	script, err := filepath.Abs("testdata/fakeagent.sh")
	if err != nil {
		t.Fatal(err)
	}
	plog := filepath.Join(t.TempDir(), "person")
	out, err := s.run(ctx, nil, "split-window", "-d", "-t", a.pane.ID, "-P", "-F", stateFormat,
		"-e", "FAKE_LOG="+plog, "-e", "INPUTRC=/dev/null", "--", script)
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseState(strings.SplitN(out, "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	p := agent{s: s, pane: st.Pane, log: plog}
	t.Cleanup(func() { endProcess(t, s, p.pane) })
	waitFor(t, 20*time.Second, "the person's prompt", func() bool { return p.screen(t).CursorLine() == ">" || p.screen(t).CursorLine() == "> " })
	if err := s.Type(ctx, p.pane.ID, "rm -rf build"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the person's draft", func() bool { return strings.TrimRight(p.screen(t).CursorLine(), " ") == "> rm -rf build" })
	if _, err := s.run(ctx, nil, "set-option", "-w", "-t", a.pane.ID, "synchronize-panes", "on"); err != nil {
		t.Fatal(err)
	}

	if err := term.Deliver(ctx, "a contact asks something"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the agent to take the text", func() bool { return equal(a.taken(), []string{"a contact asks something"}) })

	// Keys reach a pane in order: once a key typed after the delivery is
	// on the person's screen, an Enter the delivery sent there has been
	// taken before it.
	if _, err := s.run(ctx, nil, "set-option", "-w", "-t", a.pane.ID, "synchronize-panes", "off"); err != nil {
		t.Fatal(err)
	}
	if err := s.Type(ctx, p.pane.ID, "X"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the key typed after the delivery", func() bool { return strings.Contains(p.screen(t).Text(), "X") })
	if got := p.taken(); len(got) != 0 {
		t.Fatalf("the delivery's Enter ran the person's half-typed command in another pane: it read %q\n%s", got, p.screen(t).Text())
	}
	if line := strings.TrimRight(p.screen(t).CursorLine(), " "); line != "> rm -rf buildX" {
		t.Fatalf("the person's draft is now %q", line)
	}
}
