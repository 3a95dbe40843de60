package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestBoardNoteBeforeTheFirstClaim: alice (node A) and bob (node B), whose
// nodes are contacts, start on the same repository. Each reads the board
// first, as a careful agent does: nobody has claimed yet, so there is no
// board room. Before, neither node counted the other's live agents then:
// each was told "only one agent session is alive in this project: claims
// are optional overhead", skipped claiming, and the two edited the same
// files with no conflict ever told. Now, with no board room yet, a node
// counts the live agents of all its active contacts (the first claim
// shares the board with each of them).
func TestBoardNoteBeforeTheFirstClaim(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := make([]*localapi.Client, 2)
	for i, name := range []string{"alice", "bob"} {
		cs[i] = localapi.NewClient(node.SocketPath(nt.Home(i)))
		defer cs[i].Close()
		if _, err := cs[i].Session(ctx, localapi.SessionRequest{Session: "s-" + name, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	bob := "bob@" + nt.ID(1).String()
	nt.WaitFor(30*time.Second, func() bool {
		ws, err := cs[0].Who(ctx)
		if err != nil {
			return false
		}
		for _, w := range ws {
			if w.Address == bob {
				return true
			}
		}
		return false
	}, "node A to see bob live")
	const project = "0123456789abcdef0123456789abcdef"
	v, err := cs[0].Board(ctx, "alice", localapi.BoardRequest{Project: project})
	if err != nil {
		t.Fatal(err)
	}
	if v.Note != "" || !slices.Contains(v.Alive, bob) {
		t.Errorf("alice, with bob live on a contact's node, is told: %q (alive: %v)", v.Note, v.Alive)
	}
}
