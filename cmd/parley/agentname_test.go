package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `parley agent register human` is refused: "human" is the user of the
// node (the CLI speaks as them), so no agent may take it. The node says so
// in one line, and registers nothing.
func TestCLIAgentRegisterHumanRefused(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	for _, name := range []string{"human", "Human"} {
		_, errs, code := run(t, "--home", home, "agent", "register", name)
		if code == 0 || !strings.Contains(errs, `"human" is you, the user of this node`) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Fatalf("agent register %s: exit %d, stderr %q, want one line saying it is the user's name", name, code, errs)
		}
	}
	var list []cliAgent
	runJSON(t, &list, "--home", home, "agent", "list")
	if len(list) != 0 {
		t.Fatalf("agents after the refusals: %+v", list)
	}
}
