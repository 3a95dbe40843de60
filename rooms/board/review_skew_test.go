package board_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestSlowClockDoesNotTakeAHeldClaim: node 1's clock is five minutes
// behind (a laptop without NTP). Alice on node 0 claims parse/*.go; node 1
// has her claim in its store (it says so on a board with a right clock).
// Bob on node 1 then claims parse/lex.go. His node must refuse it, as it
// would with a right clock; failing that, alice's claim, made and seen
// first, must not lose to bob's on her own node, with her agent told that
// the two nodes "had not yet heard" of each other's claims.
func TestSlowClockDoesNotTakeAHeldClaim(t *testing.T) {
	const lag = 5 * time.Minute
	slow := func() time.Time { return time.Now().Add(-lag) }
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 {
			c.RoomClock = slow
		}
	}))
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := "alice@" + nt.ID(0).String()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	// Node 1 holds alice's claim in its store (a board with a right clock
	// shows it).
	nt.WaitFor(30*time.Second, func() bool { return holders(live(t, nt, 1))["parse/*.go"] == a }, "node 1 to have alice's claim")

	// Node 1's board, on node 1's clock (the node's own board service
	// reads time.Now; on a machine whose clock is behind, so is that).
	onNode1, err := board.New(board.Config{Rooms: nt.Node(1).Rooms(), Self: nt.ID(1), Now: slow})
	if err != nil {
		t.Fatal(err)
	}
	_, err = onNode1.Claim(ctx, "bob", board.ClaimRequest{Project: project, Paths: []string{"parse/lex.go"}, Note: "lexer fix", TTL: time.Hour})
	var ce *board.ConflictError
	if errors.As(err, &ce) {
		return // refused, as with a right clock
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node 1 posted bob's claim over alice's, which it had stored")
	nt.WaitFor(30*time.Second, func() bool {
		h, err := nt.Node(0).Board().History(ctx, project, "parse/lex.go")
		return err == nil && len(h) == 2
	}, "node 0 to have bob's claim")
	if got := holders(live(t, nt, 0))["parse/*.go"]; got != a {
		h, _ := nt.Node(0).Board().History(ctx, project, "")
		t.Errorf("on node 0 alice's claim, made and seen first, is gone (held by %q); history: %+v", got, h)
	}
	for _, n := range nt.Node(0).Board().Notices("alice", false) {
		if n.Kind == board.NoticeLost && strings.Contains(n.Text, "had not yet heard") {
			t.Errorf("alice is told her node had not heard of bob's claim: %s", n.Text)
		}
	}
}

// TestBackdatedClaimDoesNotTakeAHeldClaim: a member node posts a claim
// dated an hour back (its room clock set so, or by hand) over paths
// another agent claimed a minute ago and that its node had in its store.
// The claim follows alice's in the room's causal order (its parents lead
// to hers), yet every node folds it before hers, and alice's live claim is
// taken from her on every node.
func TestBackdatedClaimDoesNotTakeAHeldClaim(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 {
			c.RoomClock = func() time.Time { return time.Now().Add(-time.Hour) }
		}
	}))
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := "alice@" + nt.ID(0).String()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return holders(live(t, nt, 1))["parse/*.go"] == a }, "node 1 to have alice's claim")
	var room rooms.Info
	for _, in := range nt.Node(1).Rooms().List() {
		if in.Name == board.RoomName(project) {
			room = in
		}
	}
	body, err := board.EncodeClaim(board.ClaimBody{Paths: []string{"parse/**"}, Note: "mine", TTL: board.MaxTTL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(1).Rooms().Post(ctx, room.ID, "mallory", rooms.KindClaim, body); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		h, err := nt.Node(0).Board().History(ctx, project, "")
		return err == nil && len(h) == 2
	}, "node 0 to have mallory's claim")
	if got := holders(live(t, nt, 0))["parse/*.go"]; got != a {
		h, _ := nt.Node(0).Board().History(ctx, project, "")
		t.Errorf("a claim dated back took alice's live claim on her own node (parse/*.go held by %q); history: %+v", got, h)
	}
}
