package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPRenameKeepsOrTellsTheAsksOwed: rooms and owed asks belong to an
// agent's name, so a session that renames its agent (parley_register
// with a new name) no longer sees the ask it owes, and its asker waits on
// a name no session holds (parley_ask to it is refused as unknown). The
// rename's result must at least say what was left behind under the old
// name; before, it said only "You are NEW", and every later result was
// silent about the ask; now it names the old name's rooms and asks owed.
func TestMCPRenameKeepsOrTellsTheAsksOwed(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a := connect(t, nt, 0, "a")
	b := connect(t, nt, 0, "b")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	call(t, b, "parley_register", map[string]any{"name": "beta"})
	call(t, b, "parley_ask", map[string]any{"to": "alpha", "text": "still there?", "wait_seconds": 1})
	owedAsk(t, a, "still there?") // shown once in full: alpha knows it owes it
	_, text := call(t, a, "parley_register", map[string]any{"name": "alpha2"})
	if strings.Contains(text, "still there?") || strings.Contains(text, "alpha@") || strings.Contains(text, `"alpha"`) {
		return
	}
	if nodetest.Poll(2*time.Second, func() bool {
		_, got := call(t, a, "parley_who", nil)
		return strings.Contains(got, "still there?")
	}) {
		return
	}
	t.Fatalf("after the rename the ask alpha owed is neither shown nor named:\n%s", text)
}
