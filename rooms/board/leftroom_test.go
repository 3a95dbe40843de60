package board_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestBoardOfALeftRoomSameAcrossARestart: alice claims x.go, then her
// node leaves the board room. The board folds the claims of a room it
// left ("its claims stay in the fold"), so x.go is still alice's and bob
// is refused it; after a restart the node reads only the rooms it is in,
// and the same board shows x.go free. What the board holds must not
// depend on whether the node restarted since. Before, x.go stayed
// alice's until a restart; now leaving a board room folds the board again
// without it, so x.go is free at once, as after a restart.
func TestBoardOfALeftRoomSameAcrossARestart(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "alice's work", time.Hour, 0, "x.go"); err != nil {
		t.Fatal(err)
	}
	v, err := nt.Node(0).Board().Board(ctx, project)
	if err != nil || len(v.Rooms) != 1 {
		t.Fatalf("board: %+v, %v", v, err)
	}
	if _, err := nt.Node(0).Rooms().LeaveNode(ctx, identity.RoomID(v.Rooms[0]), "alice"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool {
		v, err := nt.Node(0).Board().Board(ctx, project)
		return err == nil && len(v.Rooms) == 0
	}, "the board to drop the room left")
	before := holders(live(t, nt, 0))

	nt.Crash(0)
	nt.RestartAlone(0)
	after := holders(live(t, nt, 0))
	if !maps.Equal(before, after) {
		t.Fatalf("the board of a left room: %v before a restart, %v after", before, after)
	}
}
