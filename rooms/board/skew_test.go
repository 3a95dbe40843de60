package board_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestSlowClockDoesNotTakeAHeldClaim: node 1's clock is five minutes
// behind (a laptop without NTP). Alice on node 0 claims parse/*.go; node 1
// has her claim in its store, held back as dated more than MaxAhead past
// its clock. Bob on node 1 then claims parse/lex.go. Before, node 1's
// conflict check saw only the claims it had folded: bob's claim went
// through, dated five minutes before alice's, and took her live claim on
// every node, her agent told that the two nodes "had not yet heard" of
// each other's claims. Now node 1 refuses it, naming alice's claim as
// dated ahead of its clock.
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
	// and is a member of the board's room, so that its own claims post
	// (a CI run found it holding the claim a moment before that).
	nt.WaitFor(30*time.Second, func() bool {
		for _, in := range nt.Node(1).Rooms().List() {
			if strings.HasPrefix(in.Name, board.RoomPrefix) && slices.Contains(in.Members, nt.ID(1)) {
				return true
			}
		}
		return false
	}, "node 1 to be a member of the board's room")

	// Node 1's board, on node 1's clock (the node's own board service
	// reads time.Now; on a machine whose clock is behind, so is that).
	onNode1, err := board.New(board.Config{Rooms: nt.Node(1).Rooms(), Self: nt.ID(1), Now: slow})
	if err != nil {
		t.Fatal(err)
	}
	_, err = onNode1.Claim(ctx, "bob", board.ClaimRequest{Project: project, Paths: []string{"parse/lex.go"}, Note: "lexer fix", TTL: time.Hour})
	var ce *board.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("bob's claim over alice's, which node 1 holds back as dated ahead: %v", err)
	}
	if ce.Held.Holder != a || ce.Path != "parse/lex.go" || ce.Ahead < lag-board.MaxAhead ||
		!strings.Contains(ce.Error(), "ahead of this node's clock (this node's clock may be behind)") {
		t.Fatalf("refused as: %v (%+v)", ce, ce)
	}
	// A claim that would expire before alice's date takes nothing from
	// her in the fold: it goes through.
	if _, err := onNode1.Claim(ctx, "bob", board.ClaimRequest{Project: project, Paths: []string{"parse/lex.go"}, Note: "a glance", TTL: time.Minute}); err != nil {
		t.Fatalf("a one-minute claim, over before alice's claim's date: %v", err)
	}
	for _, n := range nt.Node(0).Board().Notices("alice", false) {
		if n.Kind == board.NoticeLost {
			t.Errorf("alice is told her claim lost: %s", n.Text)
		}
	}
}

// TestSlowClockDatesAfterWhatItFollows: node 1's clock is 30 s behind.
// Alice on node 0 claims parse/*.go and releases it; once node 1 has the
// release, bob on node 1 claims parse/lex.go. Before, node 1 dated bob's
// claim by its clock alone, before alice's claim and release: on every
// node the fold had alice's claim lose to bob's, or bob's lose to hers.
// Now a node's event is dated just after the newest of its parents when
// that is ahead of its clock by less than rooms.MaxStepBack; also after a
// restart, when the parents' times are read from the store.
func TestSlowClockDatesAfterWhatItFollows(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "running", true: "restarted"}[restart], func(t *testing.T) {
			nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
				if i == 1 {
					c.RoomClock = func() time.Time { return time.Now().Add(-30 * time.Second) }
				}
			}))
			nt.Befriend(t, 0, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
				t.Fatal(err)
			}
			// Node 1 in the board (its join posted), the release is the
			// head its next event follows.
			waitMember(t, nt, 1)
			if _, err := nt.Node(0).Board().Release(ctx, agentName("alice"), project, nil); err != nil {
				t.Fatal(err)
			}
			nt.WaitFor(30*time.Second, func() bool {
				h, err := nt.Node(1).Board().History(ctx, project, "")
				return err == nil && len(h) == 2
			}, "node 1 to have alice's claim and release")
			if restart {
				nt.Crash(1)
				nt.Restart(1)
				waitMember(t, nt, 1)
			}
			if _, err := claim(ctx, nt, 1, "bob", "lexer fix", time.Hour, 0, "parse/lex.go"); err != nil {
				t.Fatal(err)
			}
			b := "bob@" + nt.ID(1).String()
			for i := range 2 {
				nt.WaitFor(30*time.Second, func() bool {
					h, err := nt.Node(i).Board().History(ctx, project, "")
					return err == nil && len(h) == 3
				}, "node %d to have bob's claim", i)
				if hs := holders(live(t, nt, i)); len(hs) != 1 || hs["parse/lex.go"] != b {
					h, _ := nt.Node(i).Board().History(ctx, project, "")
					t.Fatalf("node %d's board: %v; history: %+v", i, hs, h)
				}
			}
			h, _ := nt.Node(0).Board().History(ctx, project, "")
			if h[2].Holder != b || h[2].Time <= h[1].Time || h[2].Lost != nil {
				t.Fatalf("history: %+v", h)
			}
		})
	}
}

// TestFarAheadEventIsNotFollowed: a member's clock is an hour ahead, and
// its claim is a head of the board room when this node claims. This
// node's claim is dated by its own clock, not just after that claim: it
// holds at once, here and on the member's node, and is not held back as
// dated ahead.
func TestFarAheadEventIsNotFollowed(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 {
			c.RoomClock = func() time.Time { return time.Now().Add(time.Hour) }
		}
	}))
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "node 1 to see alice's claim")
	waitMember(t, nt, 1)
	if _, err := claim(ctx, nt, 1, "mallory", "n", time.Hour, 0, "unrelated/**"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		h, err := nt.Node(0).Board().History(ctx, project, "")
		return err == nil && len(h) == 2
	}, "node 0 to have mallory's claim")
	before := time.Now().UnixMilli()
	res, err := claim(ctx, nt, 0, "carol", "docs", time.Hour, 0, "docs/**")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Held) != 1 || res.Held[0].Since < before || res.Held[0].Since > time.Now().UnixMilli() {
		t.Fatalf("carol's claim after one dated an hour ahead: %+v (posted from %d)", res.Held, before)
	}
}

// waitMember waits for node i to be a member of the project's board room:
// it may hold the room's events, caught up after an invite, before it
// takes in the invite itself.
func waitMember(t *testing.T, nt *nodetest.Net, i int) {
	t.Helper()
	nt.WaitFor(30*time.Second, func() bool {
		for _, in := range nt.Node(i).Rooms().List() {
			if in.Name == board.RoomName(project) && slices.Contains(in.Members, nt.ID(i)) {
				return true
			}
		}
		return false
	}, "node %d to be a member of the board room", i)
}
