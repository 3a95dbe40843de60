package board_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
	"github.com/parley-mesh/parley/rooms/board"
)

// skewedNode starts one node whose room events are dated by a clock
// *offset ahead of time.Now (its board service reads time.Now), makes
// the project's board with a claim of alice's on zzz/**, and returns the
// board room.
func skewedNode(ctx context.Context, t *testing.T, offset *atomic.Int64) (*nodetest.Net, identity.RoomID) {
	t.Helper()
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomClock = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	}))
	if _, err := claim(ctx, nt, 0, "alice", "unrelated", time.Hour, 0, "zzz/**"); err != nil {
		t.Fatal(err)
	}
	v, err := nt.Node(0).Board().Board(ctx, project)
	if err != nil || len(v.Rooms) != 1 {
		t.Fatalf("board: %+v, %v", v, err)
	}
	return nt, identity.RoomID(v.Rooms[0])
}

// postClaim posts a claim event as agent, as a member whose clock is
// where *offset says would (its board's check is not asked).
func postClaim(ctx context.Context, t *testing.T, nt *nodetest.Net, room identity.RoomID, agent string, ttl time.Duration, paths ...string) {
	t.Helper()
	body, err := board.EncodeClaim(board.ClaimBody{Paths: paths, Note: agent + "'s work", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(0).Rooms().Post(ctx, room, agentName(agent), rooms.KindClaim, body); err != nil {
		t.Fatal(err)
	}
}

// lostTo returns, as a board whose clock is far enough ahead to fold
// every event sees it, the holder each claim of agent lost to.
func lostTo(ctx context.Context, t *testing.T, nt *nodetest.Net, ahead time.Duration, agent string) []string {
	t.Helper()
	later, err := board.New(board.Config{Rooms: nt.Node(0).Rooms(), Self: nt.ID(0), Now: func() time.Time { return time.Now().Add(ahead) }})
	if err != nil {
		t.Fatal(err)
	}
	h, err := later.History(ctx, project, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range h {
		if r.Holder == agent+"@"+nt.ID(0).String() && r.Lost != nil {
			out = append(out, r.Lost.Holder)
		}
	}
	return out
}

// TestAheadCheckKnowsThatHeldBackClaimsExpire: two claims held back as
// dated ahead (a member whose clock is ahead): w's on a.go, dated 10 min
// ahead for one minute, then v's on a.go and b.go, dated 20 min ahead
// for an hour. In the fold w's claim has expired when v's comes, so v's
// holds b.go from then. Carol then claims b.go for an hour: dated now,
// her claim is live at v's date and takes it in the fold on every node,
// which Service.conflict is there to refuse. Before, it simulated the
// held-back claims with no expiry, took v's claim as losing to w's
// (expired by then) and let carol's claim through; now a held-back claim
// is ended at its expiry in the simulation.
func TestAheadCheckKnowsThatHeldBackClaimsExpire(t *testing.T) {
	var offset atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nt, room := skewedNode(ctx, t, &offset)
	offset.Store(int64(10 * time.Minute))
	postClaim(ctx, t, nt, room, "w", time.Minute, "a.go")
	offset.Store(int64(20 * time.Minute))
	postClaim(ctx, t, nt, room, "v", time.Hour, "a.go", "b.go")
	offset.Store(0)
	nt.WaitFor(10*time.Second, func() bool {
		nt.Node(0).Board().Board(ctx, project) //nolint:errcheck
		n, _ := board.HeldAhead(nt.Node(0).Board(), project)
		return n == 2
	}, "the board to hold back w's and v's claims")

	_, err := claim(ctx, nt, 0, "carol", "b fix", time.Hour, 0, "b.go")
	var ce *board.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("carol's hour on b.go over v's claim held back 20 min ahead: %v, want refused as v's (in the fold v's claim loses to carol's: %v)",
			err, lostTo(ctx, t, nt, 30*time.Minute, "v"))
	}
}

// TestAheadCheckCoversTheEventsDate: this node's last event is dated 50 s
// ahead of its clock (it followed a member's clock, or its own stepped
// back), and z's claim on c.go is held back as dated 150 s ahead. Carol
// claims c.go for two minutes: her claim is dated just after the node's
// last event (the rooms' stamp), so it lives until 170 s from now, past
// z's date, and takes z's claim in the fold. Before, Service.conflict
// let it through: it stopped at now + ttl, not at the date the claim
// would have + ttl. Now it stops at now + rooms.MaxStepBack + ttl, the
// latest date the rooms may give the claim.
func TestAheadCheckCoversTheEventsDate(t *testing.T) {
	var offset atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nt, room := skewedNode(ctx, t, &offset)
	offset.Store(int64(150 * time.Second))
	postClaim(ctx, t, nt, room, "z", time.Hour, "c.go")
	offset.Store(int64(50 * time.Second))
	postClaim(ctx, t, nt, room, "y", time.Hour, "other.go")
	offset.Store(0)
	nt.WaitFor(10*time.Second, func() bool {
		nt.Node(0).Board().Board(ctx, project) //nolint:errcheck
		n, _ := board.HeldAhead(nt.Node(0).Board(), project)
		return n == 1
	}, "the board to hold back z's claim")

	res, err := claim(ctx, nt, 0, "carol", "c fix", 2*time.Minute, 0, "c.go")
	var ce *board.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("carol's two minutes on c.go (posted: %+v, %v), z's claim held back 150 s ahead: want refused as z's (in the fold z's claim loses to carol's: %v)",
			res.Held, err, lostTo(ctx, t, nt, 10*time.Minute, "z"))
	}
}
