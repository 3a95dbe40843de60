package tmux

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

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
