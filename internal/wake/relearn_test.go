package wake_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/wake"
	"github.com/parley-mesh/parley/internal/wake/tmux"
	"github.com/parley-mesh/parley/node/nodetest"
)

// questionPane starts a program that asks something before its "> "
// prompt, waits until it asks, and returns its pane and the file of the
// lines it reads at its prompt.
func questionPane(t *testing.T, f *fixture) (tmux.Server, tmux.Pane, string) {
	t.Helper()
	srv := tmux.Server{Name: fmt.Sprintf("parley-wake-test-%d-%d", os.Getpid(), time.Now().UnixNano()), Config: "/dev/null"}
	t.Cleanup(func() { srv.KillServer(context.Background()) }) //nolint:errcheck // gone already is fine
	taken := filepath.Join(t.TempDir(), "taken")
	script := `printf 'Do you trust the files in this folder? [y/N] '; read answer; ` +
		`while printf '> '; read line; do printf '%s\n' "$line" >> "$LOG"; done`
	pane, err := srv.Start(f.ctx, tmux.StartOptions{Command: []string{"sh", "-c", script}, Env: []string{"LOG=" + taken}})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		sc, err := srv.Capture(f.ctx, pane.ID)
		return err == nil && strings.HasPrefix(sc.CursorLine(), "Do you trust")
	}, "the program's question")
	return srv, pane, taken
}

// answer types y and Enter at the pane, as the person would, and waits for
// the prompt.
func answer(t *testing.T, f *fixture, srv tmux.Server, pane tmux.Pane) {
	t.Helper()
	if err := srv.Type(f.ctx, pane.ID, "y"); err != nil {
		t.Fatal(err)
	}
	if err := srv.SendKeys(f.ctx, pane.ID, "Enter"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		sc, err := srv.Capture(f.ctx, pane.ID)
		return err == nil && sc.CursorLine() == ">"
	}, "the program's prompt")
}

// A route made with the line `parley run` learned from the program's first
// quiet screen, which was a question it asked before its prompt: once the
// person has answered, the node learns the real prompt, delivers there,
// and keeps the prompt learned again for restarts.
func TestTerminalRouteLearnsThePromptAfterAStartupQuestion(t *testing.T) {
	needTmux(t)
	f := newFixture(t, 5*time.Second, func(_ *fixture, c *wake.Config) { c.PaneCheck = 200 * time.Millisecond })
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(f.log.String())
		}
	})
	srv, pane, taken := questionPane(t, f)
	if err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID,
		Prompt: "Do you trust the files in this folder? [y/N] ", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	answer(t, f, srv, pane)
	id := f.ask("which port does the shop use?")
	nodetest.WaitFor(t, 40*time.Second, func() bool {
		b, _ := os.ReadFile(taken)
		return strings.Contains(string(b), id)
	}, "the wake text in the agent's input")
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		kept, _ := f.terms.Terminals()
		return len(kept) == 1 && kept[0].Prompt == ">" && kept[0].Pattern == ""
	}, "the prompt learned again to be kept")
}

// A route made with a pattern of the empty prompt (`parley run --prompt`)
// takes it for the prompt from the start and keeps it; a pattern that does
// not compile is refused.
func TestTerminalRouteWithAPromptPattern(t *testing.T) {
	needTmux(t)
	f := newFixture(t, 5*time.Second)
	srv, pane, taken := questionPane(t, f)
	var le *localapi.Error
	err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID, Pattern: `^> (`, Session: "s1"})
	if !errors.As(err, &le) || le.Status != http.StatusBadRequest {
		t.Fatalf("a pattern that does not compile: %v", err)
	}
	if err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID, Pattern: `^> ?$`, Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if kept, _ := f.terms.Terminals(); len(kept) != 1 || kept[0].Pattern != `^> ?$` {
		t.Fatalf("kept %+v", kept)
	}
	id := f.ask("which port does the shop use?")
	// Not pasted at the question: it does not match the pattern.
	answer(t, f, srv, pane)
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		b, _ := os.ReadFile(taken)
		return strings.Contains(string(b), id)
	}, "the wake text in the agent's input")
}
