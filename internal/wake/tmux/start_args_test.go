package tmux

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tmux takes a command-line argument that ends in ";" for a separator
// between tmux commands: Start must hand the program its arguments as
// given (`parley run -- sh -c 'a; b;'`, `find . -exec rm {} ;`), not cut
// them there and run what follows as tmux commands. Before, Start handed
// such an argument to tmux as it was and tmux cut the command there; now
// it writes the trailing ";" as "\;", which tmux takes for a ";" of the
// argument.
func TestWakeStartPassesArgumentsEndingInASemicolon(t *testing.T) {
	s := newServer(t)
	ctx := testCtx(t, 30*time.Second)
	out := filepath.Join(t.TempDir(), "args")
	cmd := []string{"sh", "-c", `printf '%s|' "$@" > "$OUT"; sleep 600`, "sh", "one;", ";", "two"}
	p, err := s.Start(ctx, StartOptions{Command: cmd, Env: []string{"OUT=" + out}})
	if err != nil {
		t.Fatalf("start %q: %v", cmd, err)
	}
	var got string
	waitFor(t, 10*time.Second, "the program to write its arguments", func() bool {
		b, err := os.ReadFile(out)
		got = string(b)
		return err == nil && got != ""
	})
	if want := "one;|;|two|"; got != want {
		t.Fatalf("the program in %s got the arguments %q, want %q", p.ID, got, want)
	}
}
