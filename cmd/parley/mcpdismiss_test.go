package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// parley_dismiss takes an ask's ID as the other tools take an event's:
// whole, or its first 8 characters or more, as room logs show it. Given
// the first 8 of an ask it owed (and was reminded of on every result), it
// answered "you owe no ask": the agent could not drop it that way, and
// was told something untrue.
func TestMCPDismissTakesTheAsksShortID(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	cs := mcpClient(t, home, "owner")
	callTool(t, cs, "parley_register", map[string]any{"name": "owner"})
	if r := callTool(t, cs, "parley_room_open", map[string]any{"name": "ops"}); r.Err {
		t.Fatalf("parley_room_open: %s", r.Text)
	}
	var asked localapi.AskResult
	runJSON(t, &asked, "--home", home, "room", "ask", "ops", "rotate the keys?", "--to", "owner", "--wait", "0s")
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		return strings.Contains(callTool(t, cs, "parley_who", map[string]any{}).Text, asked.AskID)
	}, "the ask to be owed")
	r := callTool(t, cs, "parley_dismiss", map[string]any{"ask_id": asked.AskID[:8]})
	if r.Err {
		t.Fatalf("parley_dismiss of the ask's first 8 characters: %s", r.Text)
	}
	if got := callTool(t, cs, "parley_who", map[string]any{}); strings.Contains(got.Text, asked.AskID) {
		t.Errorf("the ask is still owed after parley_dismiss: %s", got.Text)
	}
}
