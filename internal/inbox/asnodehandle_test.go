package inbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// An ask --to a contact's handle alone (what names show for its node)
// names no agent of this node: the refusal says the name is a node's, and
// how its user and its agents are addressed, rather than only that no
// such agent is registered here.
func TestAskToAContactsHandleNamesItsUser(t *testing.T) {
	nt := start(t, 2)
	nt.Befriend(t, 1, 0)
	register(t, nt, 0, "alpha")
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		p, err := nt.Node(0).Names().Resolve("node1")
		return err == nil && p == nt.ID(1)
	}, "node 0 to know node 1 by its handle")
	_, err := ib(nt, 0).Ask(context.Background(), "alpha", localapi.AskRequest{To: "node1", Text: "you?"})
	if !localapi.IsCode(err, localapi.CodeUnknownAgent) || !strings.Contains(err.Error(), `"node1" is the name of a node`) ||
		!strings.Contains(err.Error(), "human@node1") {
		t.Fatalf("ask --to a contact's handle: %v", err)
	}
}
