package board_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

const project = "0123456789abcdef0123456789abcdef"

func agentName(s string) identity.AgentName { return identity.AgentName(s) }

func claim(ctx context.Context, nt *nodetest.Net, i int, agent, note string, ttl, wait time.Duration, paths ...string) (board.ClaimResult, error) {
	return nt.Node(i).Board().Claim(ctx, identity.AgentName(agent), board.ClaimRequest{Project: project, Paths: paths, Note: note, TTL: ttl, Wait: wait})
}

func live(t testing.TB, nt *nodetest.Net, i int) []board.Held {
	v, err := nt.Node(i).Board().Board(context.Background(), project)
	if err != nil {
		panic(fmt.Sprintf("node %d: board: %v", i, err))
	}
	return v.Claims
}

func holders(hs []board.Held) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		out[h.Path] = h.Holder
	}
	return out
}

// claimsApart starts two befriended nodes that share a board, then, with
// them partitioned, has alice on node 0 claim a ("left side") and bob on
// node 1 claim b ("right side"), and heals the partition. ctx lasts two
// minutes, until the test ends.
func claimsApart(t *testing.T, a, b string) (nt *nodetest.Net, ctx context.Context, ra, rb board.ClaimResult) {
	t.Helper()
	nt = nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if _, err := claim(ctx, nt, 0, "alice", "setup", time.Hour, 0, "setup.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "node 1 to see the board")
	nt.Partition([]int{0}, []int{1})
	ra, err := claim(ctx, nt, 0, "alice", "left side", time.Hour, 0, a)
	if err != nil {
		t.Fatal(err)
	}
	if rb, err = claim(ctx, nt, 1, "bob", "right side", time.Hour, 0, b); err != nil {
		t.Fatal(err)
	}
	nt.Heal()
	return nt, ctx, ra, rb
}

// TestBoard: three agents on two nodes. A claim on one node is seen on
// the other; a conflicting claim is refused with the holder's note (also
// for an agent of the same node); release lets it through, and so do a
// wait for the release and a wait for the expiry; history keeps it all.
func TestBoard(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a1 := "alice@" + nt.ID(0).String()
	b := "bob@" + nt.ID(1).String()

	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return holders(live(t, nt, 1))["parse/*.go"] == a1 }, "node 1 to see alice's claim")

	for _, c := range []struct {
		node  int
		agent string
	}{{1, "bob"}, {0, "carol"}} {
		_, err := claim(ctx, nt, c.node, c.agent, "lexer fix", time.Hour, 0, "parse/lex.go")
		var ce *board.ConflictError
		if !errors.As(err, &ce) || ce.Held.Holder != a1 || ce.Held.Note != "parser rewrite" || ce.Path != "parse/lex.go" {
			t.Fatalf("%s's conflicting claim: %v", c.agent, err)
		}
	}
	// Bad input is refused and changes nothing.
	for _, req := range []board.ClaimRequest{
		{Project: project, Paths: []string{"../x"}, Note: "n"},
		{Project: project, Paths: []string{"x"}, Note: ""},
		{Project: project, Paths: []string{"x"}, Note: "n", TTL: 9 * time.Hour},
		{Project: "Not A Key", Paths: []string{"x"}, Note: "n"},
	} {
		if _, err := nt.Node(1).Board().Claim(ctx, "bob", req); !errors.Is(err, board.ErrBadInput) {
			t.Errorf("claim %+v: %v, want ErrBadInput", req, err)
		}
	}
	if _, err := nt.Node(1).Board().Release(ctx, "bob", project, []string{"parse/*.go"}); !errors.Is(err, board.ErrNotHeld) {
		t.Fatalf("bob releases alice's claim: %v", err)
	}

	// Bob is told when what he was refused goes free (once).
	notices := func(i int, agent, kind string, take bool) []board.Notice {
		var out []board.Notice
		for _, n := range nt.Node(i).Board().Notices(identity.AgentName(agent), take) {
			if n.Kind == kind {
				out = append(out, n)
			}
		}
		return out
	}
	if ns := notices(1, "bob", board.NoticeFree, true); len(ns) != 0 {
		t.Fatalf("bob told of a free path too early: %+v", ns)
	}

	// Bob waits; alice releases; bob gets it, and so has no "free now" to
	// be told of the claim he was refused.
	done := make(chan error, 1)
	go func() {
		_, err := claim(ctx, nt, 1, "bob", "lexer fix", time.Hour, time.Minute, "parse/lex.go")
		done <- err
	}()
	if _, err := nt.Node(0).Board().Release(ctx, "alice", project, []string{"parse/*.go"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("bob's waiting claim: %v", err)
	}
	if ns := notices(1, "bob", board.NoticeFree, true); len(ns) != 0 {
		t.Fatalf("bob, who holds parse/lex.go now, is told it is free: %+v", ns)
	}
	nt.WaitFor(30*time.Second, func() bool { return holders(live(t, nt, 0))["parse/lex.go"] == b }, "node 0 to see bob's claim")

	// Carol, refused too, is told once bob releases it (once).
	if ns := notices(0, "carol", board.NoticeFree, false); len(ns) != 0 {
		t.Fatalf("carol told of a path bob holds: %+v", ns)
	}
	if _, err := nt.Node(1).Board().Release(ctx, "bob", project, []string{"parse/lex.go"}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(notices(0, "carol", board.NoticeFree, false)) == 1 }, "carol to be told parse/lex.go is free")
	if ns := notices(0, "carol", board.NoticeFree, true); len(ns) != 1 || !strings.Contains(ns[0].Text, "was released") || ns[0].Paths[0] != "parse/lex.go" {
		t.Fatalf("carol's notice: %+v", ns)
	}
	if ns := notices(0, "carol", board.NoticeFree, true); len(ns) != 0 {
		t.Fatalf("carol told twice: %+v", ns)
	}

	// A short claim expires by itself; a claim waiting for it goes through.
	if _, err := claim(ctx, nt, 1, "bob", "quick look", 8*time.Second, 0, "docs/**"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return holders(live(t, nt, 0))["docs/**"] == b }, "node 0 to see bob's docs claim")
	nt.WaitFor(30*time.Second, func() bool { return len(notices(1, "bob", board.NoticeExpiring, true)) == 1 }, "bob to be told his claim ends soon")
	res, err := claim(ctx, nt, 0, "alice", "docs", time.Hour, 40*time.Second, "docs/README.md")
	if err != nil {
		t.Fatalf("alice's claim after the expiry: %v", err)
	}
	if res.Waited <= 0 {
		t.Fatalf("alice did not wait: %+v", res)
	}

	h, err := nt.Node(1).Board().History(ctx, project, "parse/lex.go")
	if err != nil || len(h) != 4 || h[0].Holder != a1 || h[1].Kind != board.KindRelease || h[2].Holder != b || h[3].Kind != board.KindRelease {
		t.Fatalf("history of parse/lex.go: %+v, %v", h, err)
	}
}

// TestBoardDeadNode: a claim of a node that died ends at its expiry.
func TestBoardDeadNode(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "gone soon", 8*time.Second, 0, "a.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "node 1 to see the claim")
	nt.Crash(0)
	if _, err := claim(ctx, nt, 1, "bob", "mine now", time.Hour, 40*time.Second, "a.go"); err != nil {
		t.Fatalf("claim after the dead node's expiry: %v", err)
	}
	// The board lives in the store: the restarted node has it, and catches up.
	nt.Restart(0)
	nt.WaitFor(60*time.Second, func() bool {
		h, err := nt.Node(0).Board().History(ctx, project, "a.go")
		return err == nil && len(h) == 2 && holders(live(t, nt, 0))["a.go"] == "bob@"+nt.ID(1).String()
	}, "the restarted node to have the board")
}

// TestBoardPartition: claims made on both sides of a partition are
// resolved the same way on both nodes at heal; the loser's claim says whom
// it lost to.
func TestBoardPartition(t *testing.T) {
	nt, ctx, ra, rb := claimsApart(t, "shared/*.go", "shared/x.go")
	nt.WaitFor(60*time.Second, func() bool {
		a, b := live(t, nt, 0), live(t, nt, 1)
		ha, _ := nt.Node(0).Board().History(ctx, project, "")
		hb, _ := nt.Node(1).Board().History(ctx, project, "")
		return len(a) == 2 && reflect.DeepEqual(a, b) && len(ha) == 3 && len(hb) == 3
	}, "both nodes to agree on the board")
	// The loser is the later of the two in (time, event ID) order.
	// (Held lists each side's claims by path: alice's setup.go comes
	// before shared/*.go.)
	since := func(hs []board.Held, path string) int64 {
		for _, h := range hs {
			if h.Path == path {
				return h.Since
			}
		}
		t.Fatalf("%s is not among %+v", path, hs)
		return 0
	}
	sa, sb := since(ra.Held, "shared/*.go"), since(rb.Held, "shared/x.go")
	loser := rb.Event
	if sa > sb || sa == sb && ra.Event > rb.Event {
		loser = ra.Event
	}
	for i := range 2 {
		h, err := nt.Node(i).Board().History(ctx, project, "shared/x.go")
		if err != nil || len(h) != 2 {
			t.Fatalf("node %d: history %+v, %v", i, h, err)
		}
		for _, r := range h {
			if (r.ID == loser) != (r.Lost != nil) {
				t.Fatalf("node %d: %+v (loser %s)", i, r, loser)
			}
		}
	}
	// The loser's agent is told, once, dated by its claim (however often
	// it reads before it takes the notice).
	li, la := 1, "bob"
	if loser == ra.Event {
		li, la = 0, "alice"
	}
	lh, _ := nt.Node(li).Board().History(ctx, project, "shared/x.go")
	var lostAt int64
	for _, r := range lh {
		if r.ID == loser {
			lostAt = r.Time
		}
	}
	for range 2 {
		for _, n := range nt.Node(li).Board().Notices(identity.AgentName(la), false) {
			if n.Kind == board.NoticeLost && (n.Time != lostAt || !strings.Contains(n.Text, "had not yet heard of it")) {
				t.Fatalf("the lost notice: %+v, want it dated %d", n, lostAt)
			}
		}
	}
	var told []board.Notice
	for _, n := range nt.Node(li).Board().Notices(identity.AgentName(la), true) {
		if n.Kind == board.NoticeLost {
			told = append(told, n)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0].Text, "lost to") {
		t.Fatalf("%s's notices: %+v", la, told)
	}
	for _, n := range nt.Node(li).Board().Notices(identity.AgentName(la), true) {
		if n.Kind == board.NoticeLost {
			t.Fatalf("told twice: %+v", n)
		}
	}
}

// TestBoardSharedWithANewContactAtOnce: a claim made before two nodes were
// contacts reaches the other node's board once they become contacts, at
// once, not at the boards' next round of invites (30 s), in which the
// other node could claim the same paths and lose them later.
func TestBoardSharedWithANewContactAtOnce(t *testing.T) {
	nt := nodetest.Start(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	nt.Befriend(t, 0, 1)
	a := "alice@" + nt.ID(0).String()
	nt.WaitFor(15*time.Second, func() bool { return holders(live(t, nt, 1))["parse/*.go"] == a }, "the new contact's board to hold the claim")
}

// TestBoardHoldsBackEntriesDatedAhead: a board whose clock is behind the
// authors' by more than MaxAhead (as a claim dated ahead looks to every
// node) does not fold that claim yet: the claims before it stay held, the
// history says why it waits, and once the clock is near it the claim is
// folded as any other.
func TestBoardHoldsBackEntriesDatedAhead(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	// A second view of the same rooms, its clock ten minutes behind: the
	// claim below is dated ten minutes ahead of it.
	var mu sync.Mutex
	lag := 10 * time.Minute
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(-lag) }
	behind, err := board.New(board.Config{Rooms: nt.Node(0).Rooms(), Self: nt.ID(0), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	v, err := behind.Board(ctx, project)
	if err != nil || len(v.Claims) != 0 {
		// alice's claim too is ten minutes ahead of this clock
		t.Fatalf("the lagging board before: %+v, %v", v.Claims, err)
	}
	h, err := behind.History(ctx, project, "")
	if err != nil || len(h) != 1 || !strings.Contains(h[0].Bad, "ahead of this node's clock") || h[0].Note != "parser rewrite" {
		t.Fatalf("the lagging board's history: %+v, %v", h, err)
	}
	mu.Lock()
	lag = board.MaxAhead / 2
	mu.Unlock()
	v, err = behind.Board(ctx, project)
	if err != nil || len(v.Claims) != 1 || v.Claims[0].Note != "parser rewrite" {
		t.Fatalf("once the clock is near, the claim is folded: %+v, %v", v.Claims, err)
	}
	if h, _ := behind.History(ctx, project, ""); len(h) != 1 || h[0].Bad != "" {
		t.Fatalf("the history once folded: %+v", h)
	}
}

// TestFutureClaimEndsNoClaim: a member whose clock is a year ahead claims
// other paths. On a board whose state is as of the last entry folded that
// claim would end every other claim, on every node; held back, it ends
// none, and a claim over a live one is still refused.
func TestFutureClaimEndsNoClaim(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithClockAhead(1, 365*24*time.Hour))
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "node 1 to see alice's claim")
	res, err := claim(ctx, nt, 1, "mallory", "n", time.Hour, 0, "unrelated/**")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Held) != 0 {
		t.Fatalf("a claim dated a year ahead holds at once on its own node: %+v", res.Held)
	}
	nt.WaitFor(30*time.Second, func() bool {
		h, err := nt.Node(0).Board().History(ctx, project, "")
		return err == nil && len(h) == 2 && strings.Contains(h[1].Bad, "ahead of this node's clock")
	}, "node 0 to hold back the claim dated ahead")
	_, err = claim(ctx, nt, 0, "carol", "lexer fix", time.Hour, 0, "parse/lex.go")
	var ce *board.ConflictError
	if !errors.As(err, &ce) || ce.Held.Note != "parser rewrite" {
		t.Fatalf("carol's claim over alice's live one: %v", err)
	}
	if hs := holders(live(t, nt, 0)); len(hs) != 1 || !strings.HasPrefix(hs["parse/*.go"], "alice@") {
		t.Fatalf("node 0's board: %v", hs)
	}
}

// TestReleaseAfterTheClockSteppedBack: the node's clock steps back 30 s
// between a claim and its release (NTP); the release is dated
// just after the claim all the same, and ends it on every node.
func TestReleaseAfterTheClockSteppedBack(t *testing.T) {
	var mu sync.Mutex
	var back time.Duration
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 0 {
			c.RoomClock = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(-back) }
		}
	}))
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "node 1 to see alice's claim")
	mu.Lock()
	back = 30 * time.Second
	mu.Unlock()
	if _, err := nt.Node(0).Board().Release(ctx, agentName("alice"), project, []string{"parse/*.go"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, i)) == 0 }, "node %d to see the release", i)
	}
	h, err := nt.Node(1).Board().History(ctx, project, "")
	if err != nil || len(h) != 2 || h[1].Kind != board.KindRelease || h[1].Time <= h[0].Time {
		t.Fatalf("history: %+v, %v", h, err)
	}
}
