package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/node/nodetest"
)

// parley_find shows each agent found by the address that works from the
// searcher's node: a contact's agent as NAME@HANDLE (its handle names it
// here), a stranger's as NAME@PEER_ID, saying its node is no contact, that
// its handle does not name it here, and what a contact request changes;
// each card says whether its node is a contact.
// Before, a stranger's agent showed as "coder@12D3… (node1)", and the
// agent that called coder@node1 was refused: no node has this handle.
func TestFindShowsTheAddressThatWorksFromThisNode(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.ConnectAll()
	nt.Befriend(t, 0, 2)
	ctx := context.Background()
	for _, i := range []int{1, 2} {
		if _, err := nt.Node(i).Agents().Register(ctx, agents.RegisterRequest{
			Name: "coder", Capabilities: []string{"go"}, TTLSeconds: 600,
		}); err != nil {
			t.Fatal(err)
		}
	}
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		p, err := nt.Node(0).Names().Resolve("node2")
		cs, ferr := nt.Node(0).Agents().Find(ctx, "agent:coder")
		return err == nil && p == nt.ID(2) && ferr == nil && len(cs) == 2
	}, "both coders to be found, and the contact's handle known")
	if _, err := nt.Node(0).Names().Resolve("node1"); err == nil {
		t.Fatal("a stranger's handle names it")
	}
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	out, body := call(t, a, "parley_find", map[string]any{"query": "agent:coder"})
	stranger, contact := "coder@"+nt.ID(1).String(), "coder@"+nt.ID(2).String()
	isContact := map[string]bool{}
	for _, c := range out["cards"].([]any) {
		m := c.(map[string]any)
		isContact[m["address"].(string)], _ = m["contact"].(bool)
	}
	if v, ok := isContact[stranger]; !ok || v || !isContact[contact] {
		t.Fatalf("parley_find agent:coder gave cards %v (address: of a contact's node); want %s of no contact's and %s of a contact's\n%s", isContact, stranger, contact, body)
	}
	for _, want := range []string{"• " + stranger, "• coder@node2", "not a contact", "parley contact request " + nt.ID(1).String()} {
		if !strings.Contains(body, want) {
			t.Fatalf("parley_find agent:coder: text does not say %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "coder@node1") {
		t.Fatalf("parley_find agent:coder shows an address that does not work here:\n%s", body)
	}
}
