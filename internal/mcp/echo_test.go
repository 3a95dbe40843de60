package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPRefusedInputIsNotEchoedWhole: a tool result stays within what
// clients take (Claude Code refuses one over 25,000 tokens); a refused
// argument of 200 KB (a model pasting a file into the wrong field) must
// not come back whole in the error or the answer, or the agent gets no
// word of what went wrong at all. Before, each call below gave a result
// of 400 to 800 KB; now quoted inputs are cut to 100 characters.
func TestMCPRefusedInputIsNotEchoedWhole(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	big := strings.Repeat("y", 200<<10)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"parley_register", map[string]any{"name": big}},
		{"parley_who", map[string]any{"node": big}},
		{"parley_dismiss", map[string]any{"ask_id": big}},
		{"parley_reply", map[string]any{"message_id": big, "text": "x"}},
		{"parley_wait", map[string]any{"ask_id": big, "wait_seconds": 1}},
		{"parley_say", map[string]any{"room": big, "text": "x"}},
		{"parley_read", map[string]any{"room": big}},
		{"parley_invite", map[string]any{"room": big, "member": "x"}},
		{"parley_ask", map[string]any{"to": big, "text": "x", "wait_seconds": 1}},
	} {
		res, err := a.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		raw, _ := json.Marshal(res)
		if len(raw) > 32<<10 {
			t.Errorf("%s with a 200 KB argument: a result of %d bytes", c.tool, len(raw))
		}
	}
}
