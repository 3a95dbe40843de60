package board_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestBoardClaimOfARemovedNodeEnds: bob's node claims x.go for 8 h on a
// board whose room alice's node made; alice's node then removes bob's
// node from the room. Every member now refuses bob's node's events after
// the removal, so bob can no longer release x.go there: his claim must
// end with the removal (an event of the room, in the same order on every
// node), not hold x.go against the room's members for the rest of its
// ttl, naming a node that is no longer in it.
func TestBoardClaimOfARemovedNodeEnds(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "unrelated", time.Hour, 0, "zzz/**"); err != nil {
		t.Fatal(err)
	}
	v, err := nt.Node(0).Board().Board(ctx, project)
	if err != nil || len(v.Rooms) != 1 {
		t.Fatalf("board: %+v, %v", v, err)
	}
	room := identity.RoomID(v.Rooms[0])
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "node 1 to share the board")
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
