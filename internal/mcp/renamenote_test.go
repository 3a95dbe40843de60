package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPNameChangeNoteInTheStructuredOutput: a session whose registration
// lapsed while another took its name binds again under its fallback name,
// and the call's result says "you are now X, no longer alpha". Claude Code
// gives its model the structured output alone when a result has one
// (docs: "what only the text says never reaches it"), and the note is in
// the text alone: the model goes on signing and answering as alpha.
// Before, only the text told it; now the envelope's name_change does too.
func TestMCPNameChangeNoteInTheStructuredOutput(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx := context.Background()
	sleeper := connect(t, nt, 0, "sleeper-session")
	call(t, sleeper, "parley_register", map[string]any{"name": "alpha"})
	if err := nt.Node(0).Agents().Unregister(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	fresh := connect(t, nt, 0, "fresh-session")
	call(t, fresh, "parley_register", map[string]any{"name": "alpha"})

	out, text := call(t, sleeper, "parley_room_open", map[string]any{"name": "after-the-lapse"})
	if !strings.Contains(text, "no longer alpha") {
		t.Fatalf("the text does not tell of the new name: %s", text)
	}
	raw, _ := json.Marshal(out)
	if !strings.Contains(string(raw), "no longer alpha") {
		t.Fatalf("the structured output does not tell of the new name (the text does): %s", raw)
	}
}
