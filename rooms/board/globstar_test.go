package board_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestDoubleStarSlashMatchesNoFolder: an agent claims "**/*.go" for a
// repository-wide gofmt, or "src/**/x_test.go". In every glob it knows
// (git's pathspec :(glob), .gitignore, bash globstar, doublestar) "**/"
// stands for any number of folders, none included: main.go at the root is
// one of "**/*.go". Before, the board read "**" as any run with a "/"
// after it, so another agent's claim on main.go went through, and the git
// guard let its commit pass; now a "**" that is a whole segment before a
// "/" is zero or more whole segments (tokens in pattern.go).
func TestDoubleStarSlashMatchesNoFolder(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct{ glob, file string }{
		{"**/*.go", "main.go"},
		{"src/**/x_test.go", "src/x_test.go"},
		{"**/testdata/**", "testdata/golden.txt"},
	} {
		if !board.Match(c.glob, c.file) {
			t.Errorf("Match(%q, %q) is false", c.glob, c.file)
		}
		if _, err := claim(ctx, nt, 0, "alice", "gofmt everything", time.Hour, 0, c.glob); err != nil {
			t.Fatal(err)
		}
		_, err := claim(ctx, nt, 0, "bob", "a fix", time.Hour, 0, c.file)
		var ce *board.ConflictError
		if !errors.As(err, &ce) {
			t.Errorf("alice holds %s; bob's claim on %s: %v, want refused", c.glob, c.file, err)
		}
		for _, a := range []string{"alice", "bob"} {
			if _, err := nt.Node(0).Board().Release(ctx, agentName(a), project, nil); err != nil && !errors.Is(err, board.ErrNotHeld) {
				t.Fatal(err)
			}
		}
	}
}
