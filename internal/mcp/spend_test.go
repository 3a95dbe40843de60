package mcp_test

import (
	"strconv"
	"testing"

	"github.com/parley-mesh/parley/node/nodetest"
)

// Tokens and cost come only from what a client reports with a tool call;
// an agent that reported nothing shows them as unknown, and a negative
// report is refused.
func TestSpendReportedWithSay(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a, b := connect(t, nt, 0, "a"), connect(t, nt, 0, "b")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	call(t, b, "parley_register", map[string]any{"name": "beta"})
	out, _ := call(t, a, "parley_room_open", map[string]any{"name": "costs", "members": []string{"beta"}})
	room := out["room_id"].(string)
	call(t, a, "parley_say", map[string]any{"room": room, "text": "one", "tokens_in": 1200, "tokens_out": 300, "cost_usd": 0.012})
	call(t, a, "parley_say", map[string]any{"room": room, "text": "two", "tokens_in": 800})
	call(t, b, "parley_say", map[string]any{"room": room, "text": "no report"})
	if _, text, isErr := try(t, a, "parley_say", map[string]any{"room": room, "text": "x", "tokens_in": -5}); !isErr {
		t.Fatalf("a negative token count was taken: %s", text)
	}
	got := map[string]string{}
	for _, c := range nt.Node(0).Usage().Snapshot().Agents {
		s := "in=unknown out=unknown cost=unknown"
		if c.TokensIn != nil {
			s = "in=" + strconv.FormatUint(*c.TokensIn, 10)
			if c.TokensOut != nil {
				s += " out=" + strconv.FormatUint(*c.TokensOut, 10)
			}
			if c.CostUSD != nil && *c.CostUSD > 0.0119 && *c.CostUSD < 0.0121 {
				s += " cost=0.012"
			}
		}
		got[c.Name] = s
	}
	if got["alpha"] != "in=2000 out=300 cost=0.012" || got["beta"] != "in=unknown out=unknown cost=unknown" {
		t.Fatalf("usage %v", got)
	}
}
