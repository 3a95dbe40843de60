package node_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// REVIEW (rvui): with the dashboard open in six tabs, no tab can act any
// more. Each tab holds one request open for its stream, over HTTP/1.1,
// and a browser opens at most six connections to one host (Chromium's
// socket pool): the six streams take them all, so every other request
// with credentials, a post, an approve, a seventh tab's stream, waits for
// one to end, which it never does while a tab is open. Six tabs are a
// restored session or a user who opened `parley ui --open` a few times.
// A post from one of them should reach the room.
func TestReviewDashboardSixTabsStarveActions(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c0.Close()
	registered(t, ctx, c0, "alice")
	room, err := c0.OpenRoom(ctx, "alice", localapi.OpenRoomRequest{Name: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)
	tabs := []context.Context{b}
	for range 5 {
		tab, cancelTab := chromedp.NewContext(b)
		t.Cleanup(cancelTab)
		if err := chromedp.Do(tab); err != nil { // opens the tab, for as long as tab lasts
			t.Fatalf("open a tab: %v", err)
		}
		tabs = append(tabs, tab)
	}
	for i, tab := range tabs {
		run(t, tab, fmt.Sprintf("open the dashboard in tab %d", i), chromedp.Navigate(info.URL))
		waitJS(t, tab, 30*time.Second, `document.getElementById("status").textContent === "live"`, fmt.Sprintf("tab %d's stream", i))
	}
	// The user posts from the first tab.
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID))
	waitJS(t, b, 30*time.Second, `document.getElementById("roomname").textContent.includes("ops")`, "the room open")
	eval[bool](t, b, `(() => { document.getElementById("text").value = "from one of six tabs"; document.getElementById("send").click(); return true })()`)
	ok := nodetest.Poll(30*time.Second, func() bool {
		es, err := c0.Log(ctx, room.RoomID, 0, "")
		return err == nil && slices.ContainsFunc(es, func(e localapi.Event) bool { return e.Text == "from one of six tabs" })
	})
	if !ok {
		t.Fatalf("a post from one of six open tabs did not reach the room in 30 s (the page says %q, %q)",
			eval[string](t, b, `document.getElementById("error").textContent`), eval[string](t, b, `document.getElementById("status").textContent`))
	}
}
