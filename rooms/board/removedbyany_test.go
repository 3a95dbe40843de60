package board_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestBoardMemberCannotRemoveAnotherFromTheWholeBoard: victor's node made
// the project's board room, and holds x.go. Mallory's node, a member like
// carol's, makes a board room of its own for the project, brings victor's
// and carol's nodes in, and removes victor's node from it. The removal is
// mallory's room's, and mallory may decide who is in it; but it must not
// end victor's claims made in victor's own room, nor keep victor's node
// off the whole board, on every node that is in mallory's room: any
// member could then wipe any other member's claims and take its files.
func TestBoardMemberCannotRemoveAnotherFromTheWholeBoard(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.Befriend(t, 0, 1)
	nt.Befriend(t, 0, 2)
	nt.Befriend(t, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "victor", "victor's work", time.Hour, 0, "x.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 && len(live(t, nt, 2)) == 1 }, "all nodes to share the board")
	rm, err := nt.Node(1).Rooms().Create(ctx, board.RoomName(project), "mallory")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if _, err := nt.Node(1).Rooms().Invite(ctx, rm, nt.ID(i), "mallory"); err != nil {
			t.Fatal(err)
		}
	}
	nt.WaitFor(30*time.Second, func() bool {
		for _, i := range []int{0, 2} {
			v, err := nt.Node(i).Board().Board(ctx, project)
			if err != nil || !slices.Contains(v.Rooms, string(rm)) {
				return false
			}
		}
		return true
	}, "victor's and carol's nodes to fold mallory's board room")
	if _, err := nt.Node(1).Rooms().Remove(ctx, rm, nt.ID(0), "mallory"); err != nil {
		t.Fatal(err)
	}
	v := "victor@" + nt.ID(0).String()
	if nodetest.Poll(10*time.Second, func() bool { return holders(live(t, nt, 2))["x.go"] != v }) {
		t.Fatalf("mallory's removal of victor's node from mallory's own board room ended victor's claim on x.go on carol's node: %v", holders(live(t, nt, 2)))
	}
}
