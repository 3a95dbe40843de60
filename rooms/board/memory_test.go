package board_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
	"github.com/parley-mesh/parley/rooms/board"
)

// junkClaims has node `from` post n claims of the largest body an event
// may carry, none of which decodes as a claim, into the board room it
// shares with node 0, and returns that room.
func junkClaims(ctx context.Context, t *testing.T, nt *nodetest.Net, from, n int) string {
	t.Helper()
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	var room string
	nt.WaitFor(30*time.Second, func() bool {
		v, err := nt.Node(from).Board().Board(ctx, project)
		if err == nil && len(v.Rooms) == 1 {
			room = v.Rooms[0]
		}
		return room != "" && len(v.Claims) == 1
	}, "node %d to be in node 0's board", from)
	body := bytes.Repeat([]byte{0xff}, rooms.MaxBody-256)
	for i := range n {
		body[0] = byte(i)
		if _, err := nt.Node(from).Rooms().Post(ctx, identity.RoomID(room), agentName("mallory"), rooms.KindClaim, body); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	return room
}

func mib(n int) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// TestBoardKeepsNoBodyItFolded: a member of a board room (any contact: the
// board invites every active contact) posts 64 claims whose bodies are the
// largest an event may carry and do not decode as claims. The fold
// refuses them, and keeps of each only why (a claim it takes, only what
// it decoded); the bodies stay in the store. Before, every entry kept its
// raw body in memory for as long as the node ran (State.entries): 4 MiB
// here, and as much as the members chose to post. The check measures
// what the fold's entries retain of their bodies, not the process.
func TestBoardKeepsNoBodyItFolded(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 64
	junkClaims(ctx, t, nt, 1, n)
	nt.WaitFor(60*time.Second, func() bool {
		nt.Node(0).Board().Board(ctx, project) //nolint:errcheck
		k, _ := board.FoldedBytes(nt.Node(0).Board(), project)
		return k >= n+1
	}, "node 0's board to fold the %d claims", n)
	k, held := board.FoldedBytes(nt.Node(0).Board(), project)
	t.Logf("node 0's board keeps %d entries, %d bytes in memory", k, held)
	if held > 64<<10 {
		t.Fatalf("node 0's board keeps %s of bodies in memory (%d entries, %d of them bodies the fold refused)", mib(held), k, n)
	}
	h, err := nt.Node(0).Board().History(ctx, project, "")
	if err != nil || len(h) != n+1 || h[1].Bad == "" {
		t.Fatalf("history: %d records, %v", len(h), err)
	}
}

// TestBoardKeepsOnlyWhereToFindEntriesDatedAhead: a member whose clock is
// a year ahead (or who dates them so on purpose) posts 64 claims of the
// largest body an event may carry. The board holds them back until its
// clock is near their date, keeping of each only its ID, room, arrival
// and time, and reads it from the store again when it is due (or when the
// history lists it). Before, it kept each whole, body included, in memory
// (project.later) and walked them all at every read of the board: events
// the store keeps on disk became memory the remote member chose the size
// of. The check measures what project.later retains.
func TestBoardKeepsOnlyWhereToFindEntriesDatedAhead(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithClockAhead(1, 365*24*time.Hour))
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 64
	junkClaims(ctx, t, nt, 1, n)
	nt.WaitFor(60*time.Second, func() bool {
		nt.Node(0).Board().Board(ctx, project) //nolint:errcheck
		k, _ := board.HeldAhead(nt.Node(0).Board(), project)
		return k == n+1 // and node 1's join of the room, dated ahead too
	}, "node 0's board to read the %d claims dated ahead", n)
	k, held := board.HeldAhead(nt.Node(0).Board(), project)
	t.Logf("node 0's board holds %d entries dated ahead, %d bytes in memory", k, held)
	if held > 64<<10 {
		t.Fatalf("node 0's board holds %s in memory for %d claims dated a year ahead", mib(held), k)
	}
	h, err := nt.Node(0).Board().History(ctx, project, "")
	if err != nil || len(h) != n+1 {
		t.Fatalf("history: %d records, %v", len(h), err)
	}
	for _, r := range h[1:] {
		if r.Holder != "mallory@"+nt.ID(1).String() || r.Kind != board.KindClaim {
			t.Fatalf("a claim dated ahead, as the history lists it: %+v", r)
		}
	}
}

// TestBoardReadsOfUnknownProjectsKeepNothing: reads of the boards of 2,000
// projects this node has no board room of (`parley board show` in another
// repository, parley_board from an agent, a typo) answer an empty board
// and keep nothing. Before, each read added the project to the service's
// memory for good, and every later Notices (each agent's take) and Claims
// loaded them all: one Notices took 19 ms after 2,000 such reads. A claim
// on a new project still keeps its board.
func TestBoardReadsOfUnknownProjectsKeepNothing(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx := context.Background()
	const n = 2000
	for i := range n {
		key := fmt.Sprintf("%032x", i+1)
		if v, err := nt.Node(0).Board().Board(ctx, key); err != nil || len(v.Rooms)+len(v.Claims) != 0 {
			t.Fatalf("board of %s: %+v, %v", key, v, err)
		}
		if h, err := nt.Node(0).Board().History(ctx, key, ""); err != nil || len(h) != 0 {
			t.Fatalf("history of %s: %+v, %v", key, h, err)
		}
	}
	start := time.Now()
	nt.Node(0).Board().Notices("alice", false)
	t.Logf("one Notices after the reads: %v", time.Since(start))
	if got := board.Projects(nt.Node(0).Board()); got != 0 {
		t.Fatalf("after reads of %d boards the node has none of, the board service keeps %d projects in memory", n, got)
	}
	if _, err := claim(ctx, nt, 0, "alice", "parser rewrite", time.Hour, 0, "parse/*.go"); err != nil {
		t.Fatal(err)
	}
	if got := board.Projects(nt.Node(0).Board()); got != 1 {
		t.Fatalf("after a claim, %d projects kept", got)
	}
	if v, err := nt.Node(0).Board().Board(ctx, project); err != nil || len(v.Claims) != 1 || len(v.Rooms) != 1 {
		t.Fatalf("the board claimed on: %+v, %v", v, err)
	}
}

// TestBoardFoldsAgainForAnEntryDatedBeforeWhatItKept: the board's fold
// keeps only the entries of the last MaxTTL or so (and a checkpoint), so
// a claim dated further back than that cannot be folded in memory: the
// board folds again from its rooms' events. Here a member's clock is
// 10 h behind: 100 claims of a minute, then dave's claim of 8 h on
// shared.go dated 3.5 h back (he holds it now), which the fold keeps
// while it lets go of the 100; then carol's claim of 8 h on shared.go
// dated 10.5 h back, before all of them. Folded in time order, carol's
// claim held shared.go when dave claimed it, so dave's lost and nobody
// holds it now; the history, read from the store, lists every entry.
func TestBoardFoldsAgainForAnEntryDatedBeforeWhatItKept(t *testing.T) {
	var mu sync.Mutex
	back := 10 * time.Hour
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 {
			c.RoomClock = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(-back) }
		}
	}))
	setBack := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); back = d }
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	room := junkClaims(ctx, t, nt, 1, 0)
	post := func(agent, path string, ttl time.Duration) string {
		t.Helper()
		body, err := board.EncodeClaim(board.ClaimBody{Paths: []string{path}, Note: "n", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		id, err := nt.Node(1).Rooms().Post(ctx, identity.RoomID(room), agentName(agent), rooms.KindClaim, body)
		if err != nil {
			t.Fatal(err)
		}
		return id.String()
	}
	for i := range 100 {
		post("bob", fmt.Sprintf("old/%d.go", i), time.Minute)
	}
	setBack(3*time.Hour + 30*time.Minute)
	dave := post("dave", "shared.go", 8*time.Hour)
	holdsShared := func() string {
		v, err := nt.Node(0).Board().Board(ctx, project)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range v.Claims {
			if h.Path == "shared.go" {
				return h.Holder
			}
		}
		return ""
	}
	nt.WaitFor(30*time.Second, func() bool {
		return holdsShared() != "" && board.FoldTrimmed(nt.Node(0).Board(), project)
	}, "node 0 to fold dave's claim and let go of the old ones")
	if n, _ := board.FoldedBytes(nt.Node(0).Board(), project); n > 60 {
		t.Fatalf("node 0's fold keeps %d of 102 entries", n)
	}
	setBack(10*time.Hour + 30*time.Minute)
	carol := post("carol", "shared.go", 8*time.Hour)
	nt.WaitFor(30*time.Second, func() bool { return holdsShared() == "" }, "node 0 to fold carol's claim dated back, and dave's to lose")
	h, err := nt.Node(0).Board().History(ctx, project, "")
	if err != nil || len(h) != 103 {
		t.Fatalf("history: %d records, %v", len(h), err)
	}
	if h[0].ID != carol || h[0].Bad != "" || h[0].Lost != nil {
		t.Fatalf("the first record: %+v", h[0])
	}
	var d board.Record
	for _, r := range h {
		if r.ID == dave {
			d = r
		}
	}
	if d.Lost == nil || d.Lost.Event != carol {
		t.Fatalf("dave's claim: %+v", d)
	}
}

// TestBoardFoldsEntriesDatedAheadAsTheyComeDue: claims dated ahead, posted
// in another order than their dates, are each folded once the clock is
// within MaxAhead of its date, read from the store again then; the history
// lists those still ahead by date.
func TestBoardFoldsEntriesDatedAheadAsTheyComeDue(t *testing.T) {
	var mu sync.Mutex
	ahead := 20 * time.Minute
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomClock = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(ahead) }
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "first", time.Hour, 0, "a.go"); err != nil { // dated 20 min ahead
		t.Fatal(err)
	}
	v, err := nt.Node(0).Board().Board(ctx, project)
	if err != nil || len(v.Rooms) != 1 {
		t.Fatalf("board: %+v, %v", v, err)
	}
	for _, c := range []struct {
		ahead time.Duration
		path  string
	}{{30 * time.Minute, "c.go"}, {10 * time.Minute, "b.go"}} {
		mu.Lock()
		ahead = c.ahead
		mu.Unlock()
		body, err := board.EncodeClaim(board.ClaimBody{Paths: []string{c.path}, Note: "n", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nt.Node(0).Rooms().Post(ctx, identity.RoomID(v.Rooms[0]), "alice", rooms.KindClaim, body); err != nil {
			t.Fatal(err)
		}
	}
	// A view of the same rooms with a clock of its own.
	var now time.Duration
	view, err := board.New(board.Config{Rooms: nt.Node(0).Rooms(), Self: nt.ID(0),
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(now) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		now  time.Duration
		want []string
	}{{0, nil}, {9 * time.Minute, []string{"b.go"}}, {19 * time.Minute, []string{"a.go", "b.go"}}, {29 * time.Minute, []string{"a.go", "b.go", "c.go"}}} {
		mu.Lock()
		now = step.now
		mu.Unlock()
		v, err := view.Board(ctx, project)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range v.Claims {
			got = append(got, h.Path)
		}
		if fmt.Sprint(got) != fmt.Sprint(step.want) {
			t.Fatalf("at %v ahead: claims %v, want %v", step.now, got, step.want)
		}
		h, err := view.History(ctx, project, "")
		if err != nil || len(h) != 3 {
			t.Fatalf("at %v ahead: history %+v, %v", step.now, h, err)
		}
		for i, r := range h {
			if folded := i < len(step.want); folded != (r.Bad == "") || r.Paths[0] != []string{"b.go", "a.go", "c.go"}[i] {
				t.Fatalf("at %v ahead: history %+v", step.now, h)
			}
		}
	}
}
