package tmux

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wrapTmux returns a tmux program that runs before (a shell command) just
// before tmux's paste-buffer and after just after it: a person who comes to
// the pane in the moment Deliver pastes.
func wrapTmux(t *testing.T, before, after string) string {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "tmux")
	script := "#!/bin/sh\n" +
		"case \" $* \" in *\" paste-buffer \"*) " + before + ";; esac\n" +
		"tmux \"$@\"; rc=$?\n" +
		"case \" $* \" in *\" paste-buffer \"*) " + after + ";; esac\n" +
		"exit $rc\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// Deliver looks at the pane after the paste, before its Enter: a person
// who entered copy mode in between (prefix [ to scroll up) would get the
// Enter there, where it ends the mode and leaves the text unsent at the
// prompt, as if Deliver had delivered it. It returns ErrNotSent instead,
// and the pane stays as the person left it.
func TestDeliverSendsNoEnterToCopyModeEnteredAfterThePaste(t *testing.T) {
	s := newServer(t)
	a := startAgent(t, s, "0.1", StartOptions{Session: "agent"})
	term := a.bind(t, Options{})
	term.server.Bin = wrapTmux(t, ":", "tmux -L "+s.Name+" copy-mode -t "+a.pane.ID)
	err := term.Deliver(testCtx(t, 20*time.Second), "the wake text")
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("Deliver into a pane that went into copy mode after the paste: %v, want ErrNotSent", err)
	}
	if sc := a.screen(t); !sc.InMode || len(a.taken()) != 0 {
		t.Fatalf("the Enter went to the pane (in mode %v, the agent read %q):\n%s", sc.InMode, a.taken(), sc.Text())
	}
	// The person ends copy mode: the text is at the prompt, theirs to send.
	if err := s.SendKeys(testCtx(t, 10*time.Second), a.pane.ID, "-X", "cancel"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the text at the prompt", func() bool { return a.screen(t).CursorLine() == "> the wake text" })
}

// A text wrapped over several lines of a narrow pane is sent whole,
// whether the prompt is still in sight or scrolled out of it at the top.
func TestDeliverSendsALongTextWrappedOverSeveralLines(t *testing.T) {
	s := newServer(t)
	long := strings.Repeat("a peer asks something rather long ", 8)
	for _, height := range []int{20, 5} {
		a := startAgent(t, s, "0.05", StartOptions{Width: 40, Height: height})
		term := a.bind(t, Options{})
		if err := term.Deliver(testCtx(t, 20*time.Second), long); err != nil {
			t.Fatalf("%d lines: %v", height, err)
		}
		waitFor(t, 20*time.Second, "the long text", func() bool { return equal(a.taken(), []string{strings.TrimSpace(long)}) })
	}
}
