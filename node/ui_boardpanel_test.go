package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A member of a board (another node) fills it with long claims: each
// claim of 64 paths of some 480 bytes and a note of 500, within what the
// board lets one node keep (board.MaxNodeWeight, 4 MiB: about 80 such
// claims). The dashboard's board panel holds every live claim of every
// board, path by path with the note repeated on each, built, encoded and
// compared every second for each open page, and sent whole to the page
// (which draws a row for each) whenever one changes. `parley_board`
// lists at most 100 claims for this reason (a board filled with long
// claims went whole, 7.9 MB, into the agent's context); the panel should
// be bounded the same way and count the rest.
func TestDashboardBoardPanelIsBounded(t *testing.T) {
	t.Skip("finding: the dashboard's board and agents panels hold every live claim unbounded (20 claims of a member: 1,280 entries, 3.2 MB of panel JSON a second per page)")
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) { c.AgentPostLimit = -1 }))
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer c.Close()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s-mallory", Name: "mallory"}); err != nil {
		t.Fatal(err)
	}
	const project = "0123456789abcdef0123456789abcdef"
	const claims = 20
	note := strings.Repeat("n", 500)
	for k := range claims {
		paths := make([]string, 64)
		for i := range paths {
			paths[i] = fmt.Sprintf("c%02d/p%02d/%s", k, i, strings.Repeat("x", 470))
		}
		if _, err := c.Claim(ctx, "mallory", localapi.ClaimRequest{Project: project, Paths: paths, Note: note, TTLSeconds: 3600}); err != nil {
			t.Fatalf("claim %d: %v", k, err)
		}
	}
	base, tok := uiBase(t, nt, 0)
	var size, n, agents int
	nt.WaitFor(60*time.Second, func() bool {
		code, body := uiDo(t, "GET", base+"/ui/state", tok, nil, "")
		if code != 200 {
			return false
		}
		var st struct {
			Board []json.RawMessage `json:"board"`
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			return false
		}
		size, n = len(body), len(st.Board)
		var all map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &all) == nil {
			agents = len(all["agents"])
		}
		return n >= 64*claims || n > 0 && n <= 100
	}, "node 0's board panel to show mallory's claims")
	if n > 100 {
		t.Errorf("node 0's dashboard panels carry %d board entries (%d bytes of JSON, every second for each open page) from one member's %d claims (the agents panel, which lists each agent's claims too, %d bytes): the board panel is not bounded as parley_board is (100 claims)", n, size, claims, agents)
	}
}
