package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// lookAlikePage opens node 0's dashboard with node 1 a contact, node 0's
// human in a room "api", and returns the browser, node 1's client, the
// room's ID, and a function that reads a room's label in the room list.
func lookAlikePage(t *testing.T, opts ...nodetest.Option) (b context.Context, ctx context.Context, c1 *localapi.Client, mine string, label func(string) string) {
	t.Helper()
	nt := nodetest.Start(t, 2, opts...)
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c0, c1 := localapi.NewClient(node.SocketPath(nt.Home(0))), localapi.NewClient(node.SocketPath(nt.Home(1)))
	t.Cleanup(func() { c0.Close(); c1.Close() })
	r, err := c0.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "api", Purpose: "design the v2 api"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b = browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	label = func(id string) string {
		return eval[string](t, b, fmt.Sprintf(`(document.querySelector('#rooms li[data-room=%q] span') || {}).textContent || ""`, id))
	}
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!document.querySelector('#rooms li[data-room=%q]')`, r.RoomID), "node 0's room")
	return b, ctx, c1, r.RoomID, label
}

// openWith has agent of node 1 open a room named name with node 0's human
// in it, and waits for the room in node 0's list.
func openWith(t *testing.T, b, ctx context.Context, c1 *localapi.Client, me, agent, name string) string {
	t.Helper()
	registered(t, ctx, c1, agent)
	r, err := c1.OpenRoom(ctx, agent, localapi.OpenRoomRequest{Name: name, Purpose: "design the v2 api", Members: []string{"human@" + me}})
	if err != nil || len(r.Invited) != 1 {
		t.Fatalf("open %q: %+v %v", name, r, err)
	}
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!document.querySelector('#rooms li[data-room=%q]')`, r.RoomID), "the look-alike in the list")
	return r.RoomID
}

// A member of a shared room names a room after the label the page gives the
// user's own room ("api · by you · XXXXXXXX"), and makes one more "api" so
// that the user's room gets that label: the room list then shows two rooms
// with the very same text, one of them the peer's. The label was made by
// concatenating peer-controlled text with the separators it uses, so a name
// could forge it; now a room of another node always shows its creator in an
// element of its own, and the user's own room never does.
func TestReviewDashboardLabelForgedByRoomName(t *testing.T) {
	b, ctx, c1, mine, label := lookAlikePage(t)
	me := eval[string](t, b, `window.parley.node`)
	openWith(t, b, ctx, c1, me, "carol", "api") // makes node 0's room one of two "api"
	forged := openWith(t, b, ctx, c1, me, "dave", "api · by you · "+mine[:8])
	// The room list is drawn whole: with the forged room in it, every label
	// is final.
	if got, spoof := label(mine), label(forged); got == spoof {
		t.Fatalf("node 0's own room and node 1's room %s read the same in the room list: %q", forged, got)
	}
	creator := func(id string) string {
		return eval[string](t, b, fmt.Sprintf(`(document.querySelector('#rooms li[data-room=%q] .rby') || {}).textContent || ""`, id))
	}
	// Until the room's create event arrives its creator is not known ("by
	// ?"), and until the names book has node 1's handle it reads by its ID.
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`((document.querySelector('#rooms li[data-room=%q] .rby') || {}).textContent || "") === "by node1"`, forged),
		"node 1's room to name its creator by its handle")
	if c := creator(forged); c != "by node1" {
		t.Fatalf("the creator of node 1's room %s reads %q in its own element, want %q", forged, c, "by node1")
	}
	if c := creator(mine); c != "" {
		t.Fatalf("node 0's own room shows a creator, %q", c)
	}
}
