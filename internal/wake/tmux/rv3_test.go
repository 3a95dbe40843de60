package tmux

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/poll"
)

// Review rv3: Deliver looks at the pane before the paste, not before the
// Enter it sends EnterDelay later. A person who enters copy mode in
// between (prefix [ to scroll up) gets the Enter in copy mode, where it
// ends the mode: the text is left at the agent's prompt unsent, where it
// now reads as a person's draft, and Deliver reports it delivered. The
// wrapper below stands for the person: it enters copy mode right after
// tmux's paste-buffer.
func TestRV3EnterAfterPasteGoesToCopyMode(t *testing.T) {
	s := newServer(t)
	a := startAgent(t, s, "0.1", StartOptions{Session: "agent"})
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "tmux")
	script := "#!/bin/sh\ntmux \"$@\"; rc=$?\n" +
		"case \" $* \" in *\" paste-buffer \"*) tmux -L " + s.Name + " copy-mode -t " + a.pane.ID + ";; esac\nexit $rc\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	term := a.bind(t, Options{})
	term.server.Bin = wrapper
	if err := term.Deliver(testCtx(t, 20*time.Second), "the wake text"); err != nil {
		t.Fatal(err)
	}
	if !poll.Until(5*time.Second, func() bool { return equal(a.taken(), []string{"the wake text"}) }) {
		t.Fatalf("Deliver said the text was delivered, but the agent never read it (it read %q); the pane shows:\n%s",
			a.taken(), a.screen(t).Text())
	}
}

// Review rv3: Clean keeps tabs, and a terminal route flattens its text
// for programs that do not take bracketed paste, where a pasted tab is a
// Tab key press: readline completes file names into the line, so a
// peer's text reaches the agent changed by keys it pressed.
func TestRV3TabInAWakeTextIsAKeyPress(t *testing.T) {
	s := newServer(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "secret-plans.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	inputrc := filepath.Join(t.TempDir(), "inputrc")
	if err := os.WriteFile(inputrc, []byte("set enable-bracketed-paste off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("testdata/fakeagent.sh")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "taken")
	p, err := s.Start(testCtx(t, 20*time.Second), StartOptions{Command: []string{script}, Dir: work,
		Env: []string{"FAKE_LOG=" + log, "FAKE_WORK=0.1", "INPUTRC=" + inputrc}})
	if err != nil {
		t.Fatal(err)
	}
	a := agent{s: s, pane: p, log: log}
	term := a.bind(t, Options{Flatten: true, Prompt: regexp.MustCompile(`^> ?$`)})
	if err := term.Deliver(testCtx(t, 20*time.Second), "look at sec\tnothing else"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the read", func() bool { return len(a.taken()) == 1 })
	if got := a.taken()[0]; strings.Contains(got, "secret-plans") || !strings.Contains(got, "sec") || got != "look at sec nothing else" && got != "look at sec\tnothing else" {
		t.Fatalf("the text's tab was pressed as a key: the agent read %q", got)
	}
}

// Review rv3: the same gap from the other side: keys a person types
// between Deliver's last look and its paste (the wrapper types them just
// before tmux's paste-buffer) join the wake text, and Deliver's Enter
// sends the person's half-typed words as part of the agent's input. A look
// after the paste (the cursor line must be the prompt and the text, the
// pane not in a mode) before the Enter would leave such a line to the
// person instead.
func TestRV3KeysTypedJustBeforeThePasteAreSentWithIt(t *testing.T) {
	s := newServer(t)
	a := startAgent(t, s, "0.1", StartOptions{Session: "agent"})
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "tmux")
	script := "#!/bin/sh\n" +
		"case \" $* \" in *\" paste-buffer \"*) tmux -L " + s.Name + " send-keys -t " + a.pane.ID + " -l 'git push --force ';; esac\n" +
		"exec tmux \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	term := a.bind(t, Options{})
	term.server.Bin = wrapper
	if err := term.Deliver(testCtx(t, 20*time.Second), "the wake text"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "a read", func() bool { return len(a.taken()) > 0 })
	if got := a.taken()[0]; got != "the wake text" {
		t.Fatalf("the person's half-typed words were sent with the wake text: the agent read %q", got)
	}
}
