package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// longClaims has node 1's agent mallory, a member of a board shared with
// node 0 (a contact), fill the board with long claims: each of 64 paths of
// some 480 bytes and a note of 500, within what the board lets one node
// keep (board.MaxNodeWeight, 4 MiB: about 80 such claims); node 2, also
// node 0's contact, stays to claim beside them. It returns
// node 0's dashboard panels (GET /ui/state, what each open page's stream
// builds, encodes and compares every second) once they show mallory's
// last claim, and the nodes.
func longClaims(t *testing.T, claims int) (nt *nodetest.Net, panels map[string]json.RawMessage, size int) {
	t.Helper()
	nt = nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) { c.AgentPostLimit = -1 }))
	nt.Befriend(t, 0, 1)
	nt.Befriend(t, 0, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer c.Close()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s-mallory", Name: "mallory"}); err != nil {
		t.Fatal(err)
	}
	const project = "0123456789abcdef0123456789abcdef"
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
	last := strings.Repeat("x", 470)
	nt.WaitFor(60*time.Second, func() bool {
		code, body := uiDo(t, "GET", base+"/ui/state", tok, nil, "")
		if code != 200 || json.Unmarshal([]byte(body), &panels) != nil {
			return false
		}
		size = len(body)
		// mallory's last claim reached node 0's board.
		return strings.Contains(string(panels["board"]), fmt.Sprintf("c%02d/p63/%s", claims-1, last))
	}, "node 0's dashboard to show mallory's claims")
	return nt, panels, size
}

// The board panel holds every live claim of every board, path by path
// with the note repeated on each, and the page draws a row for each
// whenever one changes. `parley_board` lists at most 100 claims for this
// reason (a board filled with long claims went whole, 7.9 MB, into the
// agent's context); the panel should be bounded the same way and count
// the rest. And the agents panel carried each agent's claims
// (WhoEntry.claims), which the page does not show (the board panel
// does): 20 such claims made it 1.6 MB, built, encoded and compared
// every second for each open page. Three claims (192 paths, some 100 KB
// with their notes) pass both bounds; 20 took a quarter of a minute to
// make under the race detector.
func TestDashboardBoardPanelIsBounded(t *testing.T) {
	const claims = 3
	nt, panels, size := longClaims(t, claims)
	if n := len(panels["agents"]); n > 64<<10 || strings.Contains(string(panels["agents"]), `"claims"`) {
		t.Errorf("node 0's agents panel is %d bytes, with mallory's claims, which the page does not show", n)
	}
	type entry struct {
		Holder string   `json:"holder"`
		Note   string   `json:"note"`
		Paths  []string `json:"paths"`
	}
	var board []json.RawMessage
	if err := json.Unmarshal(panels["board"], &board); err != nil {
		t.Fatal(err)
	}
	if len(board) > 100 {
		t.Errorf("node 0's board panel carries %d entries (%d bytes of it, %d of all the panels, every second for each open page) from one member's %d claims: it is not bounded as parley_board is (100 claims)",
			len(board), len(panels["board"]), size, claims)
	}
	t.Logf("node 0's board panel: %d bytes (all the panels: %d) for mallory's %d claims of 64 long paths", len(panels["board"]), size, claims)
	// Node 0's own agent's claim shows, however much mallory holds, and
	// the panel counts what it leaves out.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s-alice", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, "alice", localapi.ClaimRequest{Project: "fedcba9876543210fedcba9876543210", Paths: []string{"rooms/room.go"}, Note: "splitting the room loop", TTLSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	// And so does node 2's carol's, made after mallory's: mallory's many
	// claims have one share of what is left, carol's node another.
	c2 := localapi.NewClient(node.SocketPath(nt.Home(2)))
	defer c2.Close()
	if _, err := c2.Session(ctx, localapi.SessionRequest{Session: "s-carol", Name: "carol"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Claim(ctx, "carol", localapi.ClaimRequest{Project: "0123456789abcdef0123456789abcdef", Paths: []string{"a/carol.go"}, Note: "carol's", TTLSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	base, tok := uiBase(t, nt, 0)
	nt.WaitFor(60*time.Second, func() bool {
		code, body := uiDo(t, "GET", base+"/ui/state", tok, nil, "")
		return code == 200 && json.Unmarshal([]byte(body), &panels) == nil &&
			strings.Contains(string(panels["board"]), "rooms/room.go") && strings.Contains(string(panels["board"]), "a/carol.go")
	}, "node 0's dashboard to show alice's and carol's claims beside mallory's")
	var entries []entry
	var more int
	if err := json.Unmarshal(panels["board"], &entries); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(panels["board_more"], &more); err != nil {
		t.Fatal(err)
	}
	paths, notes := 0, 0
	for _, e := range entries {
		paths += len(e.Paths)
		if strings.HasPrefix(e.Holder, "mallory@") {
			notes++
		}
	}
	if paths != 100 || more != claims*64+2-100 {
		t.Errorf("node 0's board panel shows %d paths and counts %d more; want 100 and %d", paths, more, claims*64+2-100)
	}
	if got := strings.Count(string(panels["board"]), strings.Repeat("n", 500)); got != notes {
		t.Errorf("mallory's note is %d times in the panel, for %d entries of mallory's: it is repeated per path", got, notes)
	}
	// The page draws a row for each path and says how many are left out.
	info, err := c.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, 30*time.Second, `(() => { const c = document.querySelector("#board caption"), r = document.querySelector('#board tr[data-path="rooms/room.go"]');
		return document.querySelectorAll("#board tr[data-path]").length === 100 && !!c && c.textContent.includes("94 more") && !!r && r.textContent.includes("splitting the room loop") })()`,
		"the board panel's 100 rows and the count of the rest")
}
