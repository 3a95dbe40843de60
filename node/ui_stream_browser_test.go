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

// After the node restarts, the open page counts as unread only the events
// it had not held. The user opened both rooms (no unread count left); the
// node restarts and the page reconnects by itself; its new stream sends
// each room's last events again. Before, the page zeroed its counts at the
// stream's hello and counted each of them as new: the room the user had
// read showed a badge of its whole history, and nothing told the user
// which messages were new. Now the page keeps what it held across the
// reconnect and counts only the events it had not.
func TestDashboardRestartKeepsReadRoomsRead(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c0.Close()
	registered(t, ctx, c0, "alice")
	var rooms []string
	for _, name := range []string{"read-room", "other-room"} {
		r, err := c0.OpenRoom(ctx, "alice", localapi.OpenRoomRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := c0.Say(ctx, "alice", localapi.SayRequest{Room: r.RoomID, Text: fmt.Sprintf("%s %d", name, i)}); err != nil {
				t.Fatal(err)
			}
		}
		rooms = append(rooms, r.RoomID)
	}
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	badge := func(room string) string {
		return fmt.Sprintf(`(document.querySelector('#rooms li[data-room=%q] .badge') || {textContent: ""}).textContent`, room)
	}
	// The user reads both rooms: no unread count is left.
	for _, r := range rooms {
		clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, r))
		waitJS(t, b, 30*time.Second, fmt.Sprintf(`window.parley.sel === %q && %s === ""`, r, badge(r)), "room "+r+" read")
	}
	waitJS(t, b, 30*time.Second, badge(rooms[0])+` === "" && `+badge(rooms[1])+` === ""`, "no unread count")

	nt.Crash(0)
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent !== "live"`, "the page to see the node gone")
	nt.Restart(0)
	c1 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c1.Close()
	if after, err := c1.UI(ctx); err != nil || after.URL != info.URL {
		t.Fatalf("the dashboard after the restart: %+v %v (was %s)", after, err, info.URL)
	}
	waitJS(t, b, 60*time.Second, `document.getElementById("status").textContent === "live"`, "the page to reconnect")
	// One new message in the room shown: once the page has it, it has
	// what the new stream sent of the other room too.
	registered(t, ctx, c1, "alice")
	posted, err := c1.Say(ctx, "alice", localapi.SayRequest{Room: rooms[1], Text: "after the restart"})
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!window.parley.seen[%q] && (window.parley.events[%q] || []).length >= 4`, posted.ID, rooms[0]), "the new message and the read room's events on the page")
	if got := eval[string](t, b, badge(rooms[0])); got != "" {
		t.Fatalf("the room read before the restart shows %q unread after it, and no message came into it", got)
	}
}
