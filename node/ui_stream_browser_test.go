package node_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// unreadBadge is the JavaScript of room's unread count on the page ("" for
// none).
func unreadBadge(room string) string {
	return fmt.Sprintf(`(document.querySelector('#rooms li[data-room=%q] .badge') || {textContent: ""}).textContent`, room)
}

// readTwoRooms starts a node whose agent alice said three lines in each of
// two rooms, opens its dashboard, and reads both rooms there: no unread
// count is left. It returns the net, a context that ends in 2 minutes, a
// client of the node, the rooms and the browser.
func readTwoRooms(t *testing.T) (*nodetest.Net, context.Context, *localapi.Client, []string, context.Context) {
	t.Helper()
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	t.Cleanup(func() { c0.Close() })
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
	badge := unreadBadge
	// The user reads both rooms: no unread count is left.
	for _, r := range rooms {
		clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, r))
		waitJS(t, b, 30*time.Second, fmt.Sprintf(`window.parley.sel === %q && %s === ""`, r, badge(r)), "room "+r+" read")
	}
	waitJS(t, b, 30*time.Second, badge(rooms[0])+` === "" && `+badge(rooms[1])+` === ""`, "no unread count")
	return nt, ctx, c0, rooms, b
}

// After the node restarts, the open page counts as unread only the events
// it had not held. The user opened both rooms (no unread count left); the
// node restarts and the page reconnects by itself; its new stream sends
// each room's last events again. Before, the page zeroed its counts at the
// stream's hello and counted each of them as new: the room the user had
// read showed a badge of its whole history, and nothing told the user
// which messages were new. Now the page keeps what it held across the
// reconnect and counts only the events it had not.
func TestDashboardRestartKeepsReadRoomsRead(t *testing.T) {
	nt, ctx, c0, rooms, b := readTwoRooms(t)
	badge := unreadBadge
	info, err := c0.UI(ctx)
	if err != nil {
		t.Fatal(err)
	}

	nt.Crash(0)
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent !== "live"`, "the page to see the node gone")
	nt.Restart(0)
	c1 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c1.Close()
	if after, err := c1.UI(ctx); err != nil || !sameOrigin(after.URL, info.URL) {
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

// With the dashboard open in seven tabs of a window, the tab shown can act
// and a new tab's stream opens. A browser opens at most six connections
// to one host over HTTP/1.1 (Chromium's socket pool), and each page held
// one for its stream. Before, six tabs took them all and every other
// request with credentials (a post, an approve, a seventh tab's stream)
// waited for one to end, which it never did while a tab was open, and the
// pages said "live". Now a tab that is hidden (as every tab of a window is
// but the one shown) closes its stream after a few seconds, and opens it
// again when it is shown. The tabs open one after another in one window,
// as `parley ui --open` run a few times or a restored session opens them;
// the user then goes back to the first tab and posts from it.
func TestDashboardTabsLeaveTheConnectionsFree(t *testing.T) {
	_, ctx, c0, room, info := opsDashboard(t, 3*time.Minute)
	const live = `document.visibilityState === "visible" && document.getElementById("status").textContent === "live"`
	b := browser(t)
	run(t, b, "open the dashboard in tab 0", chromedp.Navigate(info.URL))
	waitJS(t, b, 30*time.Second, live, "tab 0's stream")
	tabs := []context.Context{b}
	for i := 1; i < 7; i++ {
		// A new tab of the browser's window: it is the one shown, the
		// others are hidden.
		tab, cancelTab := chromedp.NewContext(b, chromedp.WithNewWindow(false))
		t.Cleanup(cancelTab)
		if err := chromedp.Do(tab); err != nil { // opens the tab, for as long as tab lasts
			t.Fatalf("open tab %d: %v", i, err)
		}
		// Each opening is a `parley ui` of its own: an address opens the
		// page once.
		again, err := c0.UI(ctx)
		if err != nil || again.URL == "" {
			t.Fatalf("ui: %+v %v", again, err)
		}
		run(t, tab, fmt.Sprintf("open the dashboard in tab %d", i), chromedp.Navigate(again.URL))
		waitJS(t, tab, 30*time.Second, live, fmt.Sprintf("tab %d's stream", i))
		tabs = append(tabs, tab)
	}
	waitJS(t, tabs[1], 30*time.Second, `document.visibilityState === "hidden" && document.getElementById("status").textContent.startsWith("paused")`,
		"tab 1, hidden, to close its stream")

	// The user goes back to the first tab and posts from it.
	if _, err := chromedp.CallBrowser(b, target.ActivateTarget, target.ActivateTargetParams{TargetID: chromedp.FromContext(b).Target.TargetID}); err != nil {
		t.Fatalf("show tab 0: %v", err)
	}
	waitJS(t, b, 30*time.Second, live, "tab 0 shown, its stream open again")
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID))
	waitJS(t, b, 30*time.Second, `document.getElementById("roomname").textContent.includes("ops")`, "the room open")
	eval[bool](t, b, `(() => { document.getElementById("text").value = "from one of seven tabs"; document.getElementById("send").click(); return true })()`)
	ok := nodetest.Poll(30*time.Second, func() bool {
		es, err := c0.Log(ctx, room.RoomID, 0, "")
		return err == nil && slices.ContainsFunc(es, func(e localapi.Event) bool { return e.Text == "from one of seven tabs" })
	})
	if !ok {
		t.Fatalf("a post from one of seven open tabs did not reach the room in 30 s (the page says %q, %q)",
			eval[string](t, b, `document.getElementById("error").textContent`), eval[string](t, b, `document.getElementById("status").textContent`))
	}
}

// The page says "live" only while its stream is open and what it asked
// was answered. A stream that brings nothing (not even the node's
// keep-alive, every 15 s) for window.parley.quiet ms (40 s; 2 s here) is
// opened again; and a request unanswered for over 5 s turns the status to
// "waiting: …", as when the browser holds it back for want of a
// connection. Before, the page said "live" from its stream's opening on,
// whatever waited.
func TestDashboardSaysWhenItIsNotLive(t *testing.T) {
	_, _, _, room, info := opsDashboard(t, 2*time.Minute)
	b := browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live" && window.parley.streams === 1`, "the stream")

	// A quiet stream is opened again.
	eval[bool](t, b, `(() => { window.parley.quiet = 2000; return true })()`)
	waitJS(t, b, 30*time.Second, `window.parley.streams >= 2`, "a quiet stream opened again")
	eval[bool](t, b, `(() => { window.parley.quiet = 40000; return true })()`)
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream open again")

	// A post the browser never answers: the status says the page waits.
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID))
	waitJS(t, b, 30*time.Second, `document.getElementById("roomname").textContent.includes("ops")`, "the room open")
	eval[bool](t, b, `(() => {
	  const f = window.fetch;
	  window.fetch = function (u, o) { return o && o.method === "POST" ? new Promise(() => {}) : f.apply(this, arguments); };
	  document.getElementById("text").value = "held back"; document.getElementById("send").click();
	  return true;
	})()`)
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent.startsWith("waiting: a request has had no answer for ")`, "the page to say it waits")
	if !eval[bool](t, b, `document.getElementById("send").disabled`) {
		t.Fatal("Post is enabled while its post is under way")
	}
}
