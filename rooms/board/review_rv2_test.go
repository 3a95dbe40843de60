package board_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestReviewEntriesDatedAheadHeldInMemoryWithoutBound: a member of a board
// room posts claims dated a year ahead (its clock, or on purpose), each
// with a body of the largest size an event may carry (a claim body the
// fold would refuse: it is never decoded before being held). The board
// keeps every one of them, body and all, in memory (project.later) until
// its date, and walks them all at each read of the board: events that the
// store keeps on disk become memory the remote member chooses the size of.
func TestReviewEntriesDatedAheadHeldInMemoryWithoutBound(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 {
			c.RoomClock = func() time.Time { return time.Now().Add(365 * 24 * time.Hour) }
		}
	}))
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	var room string
	nt.WaitFor(30*time.Second, func() bool {
		v, err := nt.Node(1).Board().Board(ctx, project)
		if err == nil && len(v.Rooms) == 1 {
			room = v.Rooms[0]
		}
		return room != "" && len(v.Claims) == 1
	}, "node 1 to be in node 0's board")
	const n = 64
	body := bytes.Repeat([]byte{0xff}, rooms.MaxBody-256)
	for i := range n {
		body[0] = byte(i)
		if _, err := nt.Node(1).Rooms().Post(ctx, identity.RoomID(room), agentName("mallory"), rooms.KindClaim, body); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	nt.WaitFor(60*time.Second, func() bool {
		nt.Node(0).Board().Board(ctx, project) //nolint:errcheck
		k, _ := board.HeldAhead(nt.Node(0).Board(), project)
		return k == n
	}, "node 0's board to read the %d claims dated ahead", n)
	k, held := board.HeldAhead(nt.Node(0).Board(), project)
	t.Logf("node 0's board holds %d entries dated ahead, %d bytes of bodies in memory", k, held)
	if held > 1<<20 {
		t.Fatalf("node 0's board holds %s of bodies of claims dated a year ahead in memory (%d entries; none decodes as a claim), and keeps every further one", fmtBytes(held), k)
	}
}

func fmtBytes(n int) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// TestReviewBoardReadsOfUnknownProjectsGrowMemory: every read of the
// board of a project this node has no board of (`parley board show` in
// another repository, parley_board from an agent, a typo) adds the project
// to the service's memory for good, and every later Notices (each agent's
// take) and Claims walks them all.
func TestReviewBoardReadsOfUnknownProjectsGrowMemory(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx := context.Background()
	const n = 2000
	for i := range n {
		key := fmt.Sprintf("%032x", i+1)
		if _, err := nt.Node(0).Board().Board(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	nt.Node(0).Board().Notices("alice", false)
	t.Logf("one Notices (each agent's take asks it) after the reads: %v", time.Since(start))
	if got := board.Projects(nt.Node(0).Board()); got >= n {
		t.Fatalf("after reads of %d boards the node has none of, the board service keeps %d projects in memory", n, got)
	}
}

// TestReviewBoardKeepsEveryBodyInMemory: a member of a board room (any
// contact: the board invites every active contact) posts claims whose
// bodies are the largest an event may carry and do not decode as claims.
// The fold refuses them (bad body), but keeps each entry, body and all,
// in memory for as long as the node runs (State.entries): the board
// rooms' whole history is held in memory, and a member chooses its size.
func TestReviewBoardKeepsEveryBodyInMemory(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	var room string
	nt.WaitFor(30*time.Second, func() bool {
		v, err := nt.Node(1).Board().Board(ctx, project)
		if err == nil && len(v.Rooms) == 1 {
			room = v.Rooms[0]
		}
		return room != "" && len(v.Claims) == 1
	}, "node 1 to be in node 0's board")
	const n = 64
	body := bytes.Repeat([]byte{0xff}, rooms.MaxBody-256)
	for i := range n {
		body[0] = byte(i)
		if _, err := nt.Node(1).Rooms().Post(ctx, identity.RoomID(room), agentName("mallory"), rooms.KindClaim, body); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	nt.WaitFor(60*time.Second, func() bool {
		nt.Node(0).Board().Board(ctx, project) //nolint:errcheck
		k, _ := board.FoldedBodies(nt.Node(0).Board(), project)
		return k >= n+1
	}, "node 0's board to fold the %d claims", n)
	k, held := board.FoldedBodies(nt.Node(0).Board(), project)
	t.Logf("node 0's board keeps %d entries, %d bytes of bodies in memory", k, held)
	if held > 1<<20 {
		t.Fatalf("node 0's board keeps %s of bodies in memory (%d entries, %d of them bodies the fold refused), and keeps every further one for as long as the node runs", fmtBytes(held), k, n)
	}
}
