package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestContestedClaimsFloodKeepsToolResultsSmall: while two contacts' nodes
// are apart, alpha (node 0) claims twenty files and mallory (node 1, whose
// post limit is its own to lift) claims each of them again, each claim
// with 63 more long paths and a long note. Once the nodes meet, alpha's
// claims hold and every one of mallory's lost: alpha is told of each, in
// its next tool results, with the paths and note of the claim that lost.
// Those notices count against a result's budget as asks do; before, they
// counted for nothing, and alpha's next result carried all twenty (some
// 650 KB: past what a client takes, which refuses the result whole while
// the notices count as told).
func TestContestedClaimsFloodKeepsToolResultsSmall(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) { c.AgentPostLimit = -1 }))
	nt.Befriend(t, 0, 1)
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer m.Close()
	if _, err := m.Session(ctx, localapi.SessionRequest{Session: "s-mallory", Name: "mallory"}); err != nil {
		t.Fatal(err)
	}
	const key = "mcp-contested-flood-test"
	call(t, a, "parley_claim", map[string]any{"paths": []string{"setup.go"}, "note": "setup", "project": key})
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		b, err := m.Board(ctx, "mallory", localapi.BoardRequest{Project: key})
		return err == nil && len(b.Claims) == 1
	}, "node 1 to see the board")

	const claims = 20
	nt.Partition([]int{0}, []int{1})
	var files []string
	for k := range claims {
		files = append(files, fmt.Sprintf("shared/f%02d.go", k))
	}
	call(t, a, "parley_claim", map[string]any{"paths": files, "note": "left side", "project": key})
	note := strings.Repeat("n", 500)
	for k, f := range files {
		paths := []string{f}
		for i := range 63 {
			paths = append(paths, fmt.Sprintf("c%02d/p%02d/%s", k, i, strings.Repeat("x", 470)))
		}
		if _, err := m.Claim(ctx, "mallory", localapi.ClaimRequest{Project: key, Paths: paths, Note: note, TTLSeconds: 3600}); err != nil {
			t.Fatalf("mallory's claim %d: %v", k, err)
		}
	}
	nt.Heal()
	nodetest.WaitFor(t, 90*time.Second, func() bool {
		n := 0
		for _, no := range nt.Node(0).Board().Notices("alpha", false) {
			if no.Kind == board.NoticeContested {
				n++
			}
		}
		return n == claims
	}, "alpha's node to hold a notice for each of mallory's %d claims that lost", claims)

	const bound = 100 << 10
	told := 0
	for round := 0; told < claims; round++ {
		if round == 2*claims {
			t.Fatalf("%d results told alpha of %d of mallory's %d claims", round, told, claims)
		}
		out, _, sjson, stext := sizes(t, a, "parley_register", nil)
		if sjson+stext > bound {
			t.Fatalf("alpha's result %d is %d bytes structured, %d as text: past what a client takes", round+1, sjson, stext)
		}
		n := strings.Count(kinds(out, board.NoticeContested)["mallory"], "also claimed")
		if n == 0 {
			t.Fatalf("alpha's result %d tells of none of the %d claims left", round+1, claims-told)
		}
		told += n
		t.Logf("result %d: %d bytes structured, %d as text; %d contested claims told", round+1, sjson, stext, n)
	}
}
