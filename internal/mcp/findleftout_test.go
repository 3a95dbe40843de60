package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Before, the node's search left out cards over its limits (16 of a node
// that is neither the searcher's nor a contact's, 256 in all) without a
// word: parley_find listed the 16 a stranger's node of 20 agents gave and
// said nothing of the 4 others, so the agent could not know to narrow its
// query; now the result counts them, and says over which limit.
func TestFindSaysHowManyCardsTheSearchLeftOut(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	ctx := context.Background()
	const n, kept = 20, 16
	for i := range n {
		if _, err := nt.Node(1).Agents().Register(ctx, agents.RegisterRequest{
			Name: fmt.Sprintf("helper-%02d", i), Capabilities: []string{"go"}, TTLSeconds: 600,
		}); err != nil {
			t.Fatalf("stranger's agent %d: %v", i, err)
		}
	}
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		cs, err := nt.Node(0).Agents().Find(ctx, "cap:go")
		return err == nil && len(cs) == kept
	}, "the stranger's cards to be found")
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	out, body := call(t, a, "parley_find", map[string]any{"query": "cap:go"})
	cards := len(out["cards"].([]any))
	perNode, _ := out["left_out_per_node"].(float64)
	inAll, _ := out["left_out_in_all"].(float64)
	if cards != kept || perNode != n-kept || inAll != 0 {
		t.Fatalf("parley_find cap:go of a stranger's node of %d agents: %d cards, %v left out over the limit per node and %v in all; want %d, %d and 0",
			n, cards, perNode, inAll, kept, n-kept)
	}
	if want := fmt.Sprintf("left out %d more cards", n-kept); !strings.Contains(body, want) || !strings.Contains(body, "at most 16 of a node") {
		t.Fatalf("parley_find cap:go: text %q; want it to say %q and why", body, want)
	}
}
