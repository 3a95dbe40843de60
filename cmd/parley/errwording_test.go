package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCLITextDropsTheMCPAside: a hint the node writes for agents and
// people alike names a tool call beside the command; the CLI keeps the
// command alone.
func TestCLITextDropsTheMCPAside(t *testing.T) {
	for in, want := range map[string]string{
		`names: no node has this handle: "bob" (give the node's peer ID, or see who is around: ` + "`parley who`" + `, or the parley_who tool)`: `no node has this handle: "bob" (give the node's peer ID, or see who is around: ` + "`parley who`)",
		`gitrepo: not a git repository: /tmp (run in the repository, or name the project: --project KEY, or project in a tool call)`:            `not a git repository: /tmp (run in the repository, or name the project: --project KEY)`,
	} {
		if got := cliText(in); !strings.HasSuffix(got, want) || strings.Contains(got, "tool") {
			t.Errorf("cliText(%q) = %q, want it to end %q", in, got, want)
		}
	}
}

// TestCLITimeoutSaysTheNodeDidNotAnswer: --timeout too short for the node
// says so, not the HTTP client's "context deadline exceeded".
func TestCLITimeoutSaysTheNodeDidNotAnswer(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	_, errs, code := run(t, "--home", home, "--timeout", "1ms", "status")
	if code == 0 {
		t.Skip("the node answered within 1ms")
	}
	if !strings.Contains(errs, "the node did not answer within 1ms") || strings.Contains(errs, "deadline exceeded") {
		t.Errorf("status --timeout 1ms: %q", errs)
	}
}
