package board_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
	"github.com/parley-mesh/parley/rooms/board"
)

// bigClaim is the body of claim i of a flood: MaxPaths paths of
// MaxPattern bytes, none overlapping another claim's, a note of MaxNote
// bytes and a ttl of MaxTTL.
func bigClaim(t testing.TB, i int) []byte {
	t.Helper()
	paths := make([]string, board.MaxPaths)
	for j := range paths {
		p := fmt.Sprintf("flood/%d/%d/", i, j)
		paths[j] = p + strings.Repeat("x", board.MaxPattern-len(p))
	}
	body, err := board.EncodeClaim(board.ClaimBody{Paths: paths, Note: strings.Repeat("n", board.MaxNote), TTL: board.MaxTTL})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestBoardFloodOfValidClaimsIsBounded: a member node posts 300 valid
// claims as large as the protocol allows (64 paths of 512 bytes, a note of
// 500, held 8 h), none in another's way, under four agent names, straight
// into the board room it shares with node 0 (a node's post limit is its
// own: a hostile node keeps none). Node 0 folds those within the node's
// MaxNodeWeight (83 of them) and ignores the rest, keeping of each only
// why. Before, it folded all 300 and kept each in memory (15.7 MiB, 52.7
// KiB a claim, checkpoints aside: 2.9 GiB for one agent at the post limit
// of 120 a minute for 8 h, and about 2.7 GiB more of checkpoints, which
// each list the held claims). The check measures the fold's memory.
func TestBoardFloodOfValidClaimsIsBounded(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	room := junkClaims(ctx, t, nt, 1, 0)
	before := heapInuse()
	const n = 300
	for i := range n {
		agent := agentName(fmt.Sprintf("mallory%d", i%4)) // agent names are the node's to choose
		if _, err := nt.Node(1).Rooms().Post(ctx, identity.RoomID(room), agent, rooms.KindClaim, bigClaim(t, i)); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	nt.WaitFor(60*time.Second, func() bool {
		h, err := nt.Node(0).Board().History(ctx, project, "")
		return err == nil && len(h) == n+1
	}, "node 0's board to take in the %d claims", n)
	m := board.FoldRetained(nt.Node(0).Board(), project)
	after := heapInuse()
	t.Logf("node 0's fold after %d claims of node 1: %d entries, %d held paths, %d checkpoints; %s in all: entries %s, records %s, held %s, index %s, checkpoints %s, rest %s; heap in use grew %s (both nodes)",
		n, m.NEntries, m.NHeld, m.NCheckpoints, mib(m.Total()), mib(m.Entries), mib(m.Records), mib(m.Held), mib(m.Index), mib(m.Checkpoints), mib(m.Rest), mib(int(after)-int(before)))
	t.Logf("per claim, checkpoints aside: %.1f KiB", float64(m.Total()-m.Checkpoints)/n/1024)
	h, err := nt.Node(0).Board().History(ctx, project, "")
	if err != nil {
		t.Fatal(err)
	}
	folded, ignored := 0, 0
	for _, r := range h[1:] {
		switch {
		case r.Bad == "":
			folded++
		case strings.Contains(r.Bad, "weigh more than the board keeps for one node"):
			ignored++
			if len(r.Paths) != 0 || r.Note != "" {
				t.Fatalf("an ignored claim's record keeps its paths or note: %d paths, note %q", len(r.Paths), r.Note)
			}
		default:
			t.Fatalf("a claim of node 1 ignored for another reason: %s", r.Bad)
		}
	}
	c, err := board.DecodeClaim(bigClaim(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	one := board.Weight(c.Paths, c.Note)
	t.Logf("%d claims folded, %d ignored (each weighs %d bytes, a node %d in %v)", folded, ignored, one, board.MaxNodeWeight, board.NodeWindow)
	if folded != board.MaxNodeWeight/one || ignored != n-folded {
		t.Fatalf("%d claims folded and %d ignored, want %d folded", folded, ignored, board.MaxNodeWeight/one)
	}
	if m.Total() > 2*board.MaxNodeWeight {
		t.Fatalf("node 0's fold holds %s for node 1's flood of %d claims", mib(m.Total()), n)
	}
}

// TestClaimPastTheNodesWeightIsRefusedBeforePosting: agents of one node
// (two names) claim as large as allowed until the node's claims reach
// MaxNodeWeight: the claim past it is refused before it is posted, saying
// why (every node would ignore it); a release still goes (releases count
// against MaxNodeReleaseWeight, apart); the board holds every claim made
// before and the release, none of them ignored.
func TestClaimPastTheNodesWeightIsRefusedBeforePosting(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := board.DecodeClaim(bigClaim(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	fit := board.MaxNodeWeight / board.Weight(c.Paths, c.Note)
	for i := range fit + 1 {
		c, err := board.DecodeClaim(bigClaim(t, i))
		if err != nil {
			t.Fatal(err)
		}
		_, err = claim(ctx, nt, 0, []string{"alice", "bob"}[i%2], c.Note, c.TTL, 0, c.Paths...)
		if i < fit && err != nil {
			t.Fatalf("claim %d of %d: %v", i, fit, err)
		}
		if i == fit {
			t.Logf("claim %d: %v", i, err)
			if !errors.Is(err, board.ErrNodeWeight) || !errors.Is(err, board.ErrBadInput) || !strings.Contains(err.Error(), "every node would ignore it") {
				t.Fatalf("claim %d, past the node's weight: %v", i, err)
			}
		}
	}
	// Releases count against a limit of their own: a node whose claims
	// reached theirs can still end them.
	first, err := board.DecodeClaim(bigClaim(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(0).Board().Release(ctx, "alice", project, first.Paths); err != nil {
		t.Fatalf("release at the node's claims' weight: %v", err)
	}
	h, err := nt.Node(0).Board().History(ctx, project, "")
	if err != nil || len(h) != fit+1 {
		t.Fatalf("history: %d records, %v", len(h), err)
	}
	for _, r := range h {
		if r.Bad != "" || r.Lost != nil {
			t.Fatalf("a claim made within the node's weight: %+v", r.Bad)
		}
	}
}
