package board_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestBoardClaimOfARemovedNodeEnds: bob's node claims x.go for 8 h on a
// board whose room alice's node made; alice's node then removes bob's
// node from the room. Every member now refuses bob's node's events after
// the removal, so bob can no longer release x.go there: his claim must
// end with the removal (an event of the room, in the same order on every
// node), not hold x.go against the room's members for the rest of its
// ttl, naming a node that is no longer in it. Before, it held x.go for
// its ttl; now the fold ends a node's claims at a board room's removal of
// it, and ignores its claims after it.
func TestBoardClaimOfARemovedNodeEnds(t *testing.T) {
	nt, ctx, room := sharedBoardOfTwo(t)
	if _, err := claim(ctx, nt, 1, "bob", "bob's work", 8*time.Hour, 0, "x.go"); err != nil {
		t.Fatal(err)
	}
	b := "bob@" + nt.ID(1).String()
	nt.WaitFor(30*time.Second, func() bool { return holders(live(t, nt, 0))["x.go"] == b }, "node 0 to see bob's claim")

	if _, err := nt.Node(0).Rooms().Remove(ctx, room, nt.ID(1), "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := claim(ctx, nt, 0, "alice", "take over x.go", time.Hour, 10*time.Second, "x.go"); err != nil {
		t.Fatalf("alice's claim on x.go after bob's node was removed from the board room: %v", err)
	}
}

// TestBoardRemovedNodeStaysOffTheBoard: alice's node removes bob's node
// from the project's board room. Bob's node, its board room gone, makes
// another room of the same name at its next claim and invites its
// contacts; alice's node opens it at once (a contact's invite) and folds
// it into the same board. The removal ends nothing: bob's claims are
// held against alice's agents again within an invite round. Before, they
// were; now a node removed from a board room by another stays off the
// project's board (its claims in any board room after the removal are
// ignored) until invited back, and the board no longer invites it back by
// itself.
func TestBoardRemovedNodeStaysOffTheBoard(t *testing.T) {
	nt, ctx, room := sharedBoardOfTwo(t)
	if _, err := claim(ctx, nt, 1, "bob", "bob's work", time.Hour, 0, "x.go"); err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(0).Rooms().Remove(ctx, room, nt.ID(1), "alice"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		v, err := nt.Node(1).Board().Board(ctx, project)
		return err == nil && len(v.Rooms) == 0
	}, "node 1 to learn of its removal")
	r, err := claim(ctx, nt, 1, "bob", "bob's other work", time.Hour, 0, "y.go")
	if err != nil {
		t.Fatal(err)
	}
	// Node 0 takes bob's new room in (a contact's invite) and folds his
	// claim into the same board: ignored.
	var rec board.Record
	nt.WaitFor(45*time.Second, func() bool {
		h, err := nt.Node(0).Board().History(ctx, project, "y.go")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range h {
			if x.ID == r.Event {
				rec = x
				return true
			}
		}
		return false
	}, "node 0 to fold bob's claim of y.go")
	b := "bob@" + nt.ID(1).String()
	if holders(live(t, nt, 0))["y.go"] == b || rec.Bad == "" {
		t.Fatalf("bob's node, removed from the board room, holds y.go on alice's node's board again: %v (its record %+v)", holders(live(t, nt, 0)), rec)
	}
	t.Logf("bob's claim on node 0: %s", rec.Bad)
}

// sharedBoardOfTwo starts two befriended nodes whose board of project
// node 0 opened with a claim of alice's (on zzz/**), shared by node 1; it
// returns them, a context for the test, and the board room.
func sharedBoardOfTwo(t *testing.T) (*nodetest.Net, context.Context, identity.RoomID) {
	t.Helper()
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if _, err := claim(ctx, nt, 0, "alice", "unrelated", time.Hour, 0, "zzz/**"); err != nil {
		t.Fatal(err)
	}
	v, err := nt.Node(0).Board().Board(ctx, project)
	if err != nil || len(v.Rooms) != 1 {
		t.Fatalf("board: %+v, %v", v, err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "node 1 to share the board")
	return nt, ctx, identity.RoomID(v.Rooms[0])
}
