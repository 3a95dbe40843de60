package board_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// bothFolded waits until node i's board has folded both claims on
// shared/x.go, one of them lost.
func bothFolded(ctx context.Context, t *testing.T, nt *nodetest.Net, i int) {
	t.Helper()
	nt.WaitFor(60*time.Second, func() bool {
		h, err := nt.Node(i).Board().History(ctx, project, "shared/x.go")
		return err == nil && len(h) == 2 && (h[0].Lost != nil || h[1].Lost != nil)
	}, "the board to fold both claims")
}

// kinds counts agent's notices on node i by kind, taken or not.
func kinds(nt *nodetest.Net, i int, agent string, take bool) map[string]int {
	n := map[string]int{}
	for _, x := range nt.Node(i).Board().Notices(agentName(agent), take) {
		n[x.Kind]++
	}
	return n
}

// TestBoardNoticesToldNotToldAgainAfterARestart: alice and bob claim
// shared/x.go apart; at the heal one loses. The loser takes its
// claim_lost notice; the winner's claim_contested is only looked at, not
// taken. The loser's node restarts: the loser is not told it lost again.
// The winner's node restarts: the winner is told claim_contested, once,
// and not again after another restart. Before, what a node had told
// lived in its memory only, and after a restart the loser was told it
// lost again, as a new conflict.
func TestBoardNoticesToldNotToldAgainAfterARestart(t *testing.T) {
	nt, ctx, _, rb := claimsApart(t, "shared/x.go", "shared/x.go")
	bothFolded(ctx, t, nt, 0)
	bothFolded(ctx, t, nt, 1)
	wi, wa, li, la := 0, "alice", 1, "bob"
	if h, _ := nt.Node(0).Board().History(ctx, project, "shared/x.go"); h[0].ID == rb.Event {
		wi, wa, li, la = 1, "bob", 0, "alice"
	}
	lost := 0
	nt.WaitFor(30*time.Second, func() bool { lost += kinds(nt, li, la, true)[board.NoticeLost]; return lost > 0 }, "the loser to be told it lost")
	if lost != 1 {
		t.Fatalf("%s told %d times it lost", la, lost)
	}
	nt.WaitFor(30*time.Second, func() bool { return kinds(nt, wi, wa, false)[board.NoticeContested] == 1 }, "the winner to have a contested notice")

	nt.Crash(li)
	nt.Restart(li)
	bothFolded(ctx, t, nt, li)
	if n := kinds(nt, li, la, true)[board.NoticeLost]; n != 0 {
		t.Fatalf("%s told again it lost after its node restarted (%d)", la, n)
	}

	nt.Crash(wi)
	nt.Restart(wi)
	bothFolded(ctx, t, nt, wi)
	if n := kinds(nt, wi, wa, true)[board.NoticeContested]; n != 1 {
		t.Fatalf("%s, not told before the restart, told %d times after it, want once", wa, n)
	}
	if n := kinds(nt, wi, wa, true)[board.NoticeContested]; n != 0 {
		t.Fatalf("%s told again (%d)", wa, n)
	}
	nt.Crash(wi)
	nt.Restart(wi)
	bothFolded(ctx, t, nt, wi)
	if n := kinds(nt, wi, wa, true)[board.NoticeContested]; n != 0 {
		t.Fatalf("%s told again after another restart (%d)", wa, n)
	}
}
