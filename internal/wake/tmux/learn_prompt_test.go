package tmux

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// questionScript asks something once, reads the answer, then reads lines
// at a "> " prompt into $LOG.
const questionScript = `printf 'Do you trust the files in this folder? [y/N] '; read answer; ` +
	`while printf '> '; read line; do printf '%s\n' "$line" >> "$LOG"; done`

// launchQuestion launches questionScript and returns its pane, Terminal
// and log.
func launchQuestion(t *testing.T, s Server) (Pane, *Terminal, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "taken")
	p, term, err := Launch(testCtx(t, 20*time.Second), s,
		StartOptions{Command: []string{"sh", "-c", questionScript}, Env: []string{"LOG=" + log}},
		Options{Quiet: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endProcess(t, s, p) })
	if got := term.Prompt(); got != "Do you trust the files in this folder? [y/N]" {
		t.Fatalf("learned %q, want the question", got)
	}
	return p, term, log
}

// typeKeys types text at the pane as a person would, then the keys.
func typeKeys(t *testing.T, s Server, pane, text string, keys ...string) {
	t.Helper()
	if text != "" {
		if err := s.Type(testCtx(t, 10*time.Second), pane, text); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		if err := s.SendKeys(testCtx(t, 10*time.Second), pane, k); err != nil {
			t.Fatal(err)
		}
	}
}

// waitCursorLine waits until the pane's cursor line is line.
func waitCursorLine(t *testing.T, s Server, pane, line string) {
	t.Helper()
	waitFor(t, 10*time.Second, "the cursor line "+line, func() bool {
		sc, err := s.Capture(testCtx(t, 10*time.Second), pane)
		return err == nil && strings.TrimRight(sc.CursorLine(), " ") == line
	})
}

// A program that asks something once at its start (a folder-trust question,
// a login or update notice) before it shows its prompt: Launch learns the
// prompt on its first quiet screen, which is that question. Once the
// person has answered it, the question is gone from the screen and the
// program waits quietly at a new line: that line is learned again for the
// prompt, and the text is delivered.
func TestWakeLaunchLearnsAStartupQuestionForThePrompt(t *testing.T) {
	s := newServer(t)
	p, term, log := launchQuestion(t, s)
	// The person attaches and answers the question.
	typeKeys(t, s, p.ID, "y", "Enter")
	waitCursorLine(t, s, p.ID, ">")
	if err := term.Deliver(testCtx(t, 15*time.Second), "Parley: an ask for you"); err != nil {
		sc, _ := s.Capture(testCtx(t, 10*time.Second), p.ID)
		t.Fatalf("nothing delivered to an agent idle at its prompt after its start-up question: %v\nscreen:\n%s", err, sc.Text())
	}
	waitFor(t, 10*time.Second, "the program to read the text", func() bool {
		b, _ := os.ReadFile(log)
		return string(b) == "Parley: an ask for you\n"
	})
	if got := term.Prompt(); got != ">" {
		t.Fatalf("learned again %q, want >", got)
	}
}

// Once the prompt is learned again, a person's half-typed text at it is a
// draft, as at a prompt learned at once: nothing is pasted over it, and
// the half-typed line is not learned again in its turn.
func TestWakeDraftAtAPromptLearnedAgainIsNeverPastedOver(t *testing.T) {
	s := newServer(t)
	p, term, log := launchQuestion(t, s)
	typeKeys(t, s, p.ID, "y", "Enter")
	waitCursorLine(t, s, p.ID, ">")
	if err := term.Deliver(testCtx(t, 15*time.Second), "first"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the program to read the text", func() bool {
		b, _ := os.ReadFile(log)
		return string(b) == "first\n"
	})
	waitCursorLine(t, s, p.ID, ">")
	typeKeys(t, s, p.ID, "half typed")
	waitCursorLine(t, s, p.ID, "> half typed")
	// Longer than a re-learn takes (RelearnQuiet): the draft stays quiet
	// all along.
	err := term.Deliver(testCtx(t, 2*RelearnQuiet), "Parley: an ask for you")
	if !errors.Is(err, ErrDraft) {
		t.Fatalf("Deliver over a draft at the prompt learned again: %v, want ErrDraft", err)
	}
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "Parley") {
		t.Fatalf("pasted over the person's draft: the program read %q", b)
	}
	if got := term.Prompt(); got != ">" {
		t.Fatalf("the draft was learned for the prompt: %q", got)
	}
	// The person sends the draft: the agent is idle at its prompt again.
	typeKeys(t, s, p.ID, "", "Enter")
	if err := term.Deliver(testCtx(t, 15*time.Second), "Parley: an ask for you"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the delivery after the draft", func() bool {
		b, _ := os.ReadFile(log)
		return string(b) == "first\nhalf typed\nParley: an ask for you\n"
	})
}

// A draft typed at the real prompt right after the start-up question was
// answered, before any look saw the prompt empty, and left quiet: a line
// longer than MaxRelearned is not learned for the prompt, and nothing is
// pasted after it.
func TestWakeLongDraftRightAfterAStartupQuestionIsNotLearned(t *testing.T) {
	s := newServer(t)
	p, term, log := launchQuestion(t, s)
	draft := "please also rename the config loader"
	typeKeys(t, s, p.ID, "y", "Enter")
	// The person types once the prompt is up (typed before the program
	// prints it, the terminal echoes the draft first and the prompt after
	// it). The test's own look is not the Terminal's: it has seen no
	// empty prompt.
	waitCursorLine(t, s, p.ID, ">")
	typeKeys(t, s, p.ID, draft)
	waitCursorLine(t, s, p.ID, "> "+draft)
	err := term.Deliver(testCtx(t, 2*RelearnQuiet), "Parley: an ask for you")
	if !errors.Is(err, ErrDraft) && !errors.Is(err, ErrBusy) {
		t.Fatalf("Deliver after a draft typed right after the question: %v, want ErrDraft or ErrBusy", err)
	}
	if got := term.Prompt(); strings.Contains(got, draft) {
		t.Fatalf("the draft was learned for the prompt: %q", got)
	}
	if b, _ := os.ReadFile(log); len(b) != 0 {
		t.Fatalf("pasted after the person's draft: the program read %q", b)
	}
}

// An answer typed after the start-up question but not sent is the
// person's: its line starts with the question learned, so it is not
// learned for the prompt, and nothing is pasted after it.
func TestWakeAnswerTypedAtAStartupQuestionIsNotLearned(t *testing.T) {
	s := newServer(t)
	p, term, log := launchQuestion(t, s)
	typeKeys(t, s, p.ID, "y")
	waitCursorLine(t, s, p.ID, "Do you trust the files in this folder? [y/N] y")
	err := term.Deliver(testCtx(t, 2*RelearnQuiet), "Parley: an ask for you")
	if !errors.Is(err, ErrDraft) && !errors.Is(err, ErrBusy) {
		t.Fatalf("Deliver after a half-given answer: %v, want ErrDraft or ErrBusy", err)
	}
	if got := term.Prompt(); got != "Do you trust the files in this folder? [y/N]" {
		t.Fatalf("the typed answer was learned for the prompt: %q", got)
	}
	sc, _ := s.Capture(testCtx(t, 10*time.Second), p.ID)
	if b, _ := os.ReadFile(log); len(b) != 0 || strings.Contains(sc.Text(), "Parley") {
		t.Fatalf("pasted after the person's answer: read %q, screen:\n%s", b, sc.Text())
	}
}

// A program whose first quiet screen was its real prompt: a draft long
// enough to wrap onto the next row moves the cursor to a row of its own,
// and the prompt learned is on no line then; that rest of the draft is not
// learned for the prompt, and nothing is pasted into it.
func TestWakeWrappedDraftIsNotLearnedForThePrompt(t *testing.T) {
	s := newServer(t)
	log := filepath.Join(t.TempDir(), "taken")
	p, term, err := Launch(testCtx(t, 20*time.Second), s,
		StartOptions{Command: []string{"sh", "-c", `while printf '> '; read line; do printf '%s\n' "$line" >> "$LOG"; done`},
			Env: []string{"LOG=" + log}, Width: 30},
		Options{Quiet: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endProcess(t, s, p) })
	draft := "a long request the person has not finished"
	typeKeys(t, s, p.ID, draft)
	waitCursorLine(t, s, p.ID, draft[28:])
	err = term.Deliver(testCtx(t, 2*RelearnQuiet), "Parley: an ask for you")
	if !errors.Is(err, ErrDraft) && !errors.Is(err, ErrBusy) {
		t.Fatalf("Deliver into a wrapped draft: %v, want ErrDraft or ErrBusy", err)
	}
	if got := term.Prompt(); got != ">" {
		t.Fatalf("the rest of a wrapped draft was learned for the prompt: %q", got)
	}
	if b, _ := os.ReadFile(log); len(b) != 0 {
		t.Fatalf("pasted into the person's draft: the program read %q", b)
	}
}

// A prompt the program came back to is its prompt for good: a quiet line
// it shows later at a new row, away from the prompt (a task that works on
// in silence), is not learned for the prompt, and nothing is pasted there.
func TestWakePromptTheProgramCameBackToIsNotLearnedAgain(t *testing.T) {
	s := newServer(t)
	log := filepath.Join(t.TempDir(), "taken")
	script := `while printf '> '; read line; do printf '%s\n' "$line" >> "$LOG"; ` +
		`if [ "$line" = go ]; then printf 'thinking'; read wait; printf '\n'; fi; done`
	p, term, err := Launch(testCtx(t, 20*time.Second), s,
		StartOptions{Command: []string{"sh", "-c", script}, Env: []string{"LOG=" + log}},
		Options{Quiet: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endProcess(t, s, p) })
	for i, text := range []string{"first", "go"} {
		if err := term.Deliver(testCtx(t, 15*time.Second), text); err != nil {
			t.Fatal(err)
		}
		want := []string{"first\n", "first\ngo\n"}[i]
		waitFor(t, 10*time.Second, "the program to read "+text, func() bool {
			b, _ := os.ReadFile(log)
			return string(b) == want
		})
	}
	waitCursorLine(t, s, p.ID, "thinking")
	err = term.Deliver(testCtx(t, 2*RelearnQuiet), "Parley: an ask for you")
	if !errors.Is(err, ErrDraft) && !errors.Is(err, ErrBusy) {
		t.Fatalf("Deliver while the program works in silence: %v, want ErrDraft or ErrBusy", err)
	}
	if got := term.Prompt(); got != ">" {
		t.Fatalf("a line away from the prompt the program came back to was learned for it: %q", got)
	}
}
