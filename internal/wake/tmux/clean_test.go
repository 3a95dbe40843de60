package tmux

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A tab in a peer's text is a Tab key press in a program that does not
// take bracketed paste (readline completes a file name into the line):
// Clean turns tabs into spaces, so the text reaches the agent as written.
func TestTabInAWakeTextIsNoKeyPress(t *testing.T) {
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
	t.Cleanup(func() { endProcess(t, s, p) })
	a := agent{s: s, pane: p, log: log}
	term := a.bind(t, Options{Flatten: true, Prompt: regexp.MustCompile(`^> ?$`)})
	if err := term.Deliver(testCtx(t, 20*time.Second), "look at sec\tnothing else"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the read", func() bool { return len(a.taken()) == 1 })
	if got := a.taken()[0]; strings.Contains(got, "secret-plans") || !strings.Contains(got, "sec") || got != "look at sec nothing else" {
		t.Fatalf("the text's tab was pressed as a key: the agent read %q", got)
	}
}

func TestCleanTurnsTabsIntoSpaces(t *testing.T) {
	for _, flatten := range []bool{false, true} {
		if got := Clean("a\tb\n\tc\t", flatten); got != map[bool]string{false: "a b\n c", true: "a b  c"}[flatten] {
			t.Errorf("Clean(flatten %v) = %q", flatten, got)
		}
	}
}

// An @ that starts a word is pasted as \@, so an agent's client attaches no
// file a peer's text names; an @ inside an address is kept.
func TestCleanEscapesAnAtThatStartsAWord(t *testing.T) {
	for in, want := range map[string]string{
		"compare with @.env please":       `compare with \@.env please`,
		"@~/.ssh/id_ed25519":              `\@~/.ssh/id_ed25519`,
		"(@src/main.go)":                  `(\@src/main.go)`,
		`escaped \\@.env`:                 `escaped \\\@.env`,
		"ask bob@12D3KooWpeer or a.b@c.d": "ask bob@12D3KooWpeer or a.b@c.d",
		"é@.env":                          `é\@.env`,
		"line\n@.env":                     "line\n\\@.env",
	} {
		if got := Clean(in, false); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}
