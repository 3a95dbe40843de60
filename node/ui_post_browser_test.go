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

// countFetches wraps the page's fetch so that window.inflight counts the
// requests under way and window.posts the POSTs made (the stream, opened
// before, is not counted).
const countFetches = `(() => {
  if (window.inflight !== undefined) return true;
  window.inflight = 0; window.posts = 0;
  const f = window.fetch;
  window.fetch = function (u, o) {
    window.inflight++;
    if (o && o.method === "POST") window.posts++;
    return f.apply(this, arguments).finally(() => { window.inflight--; });
  };
  return true;
})()`

// opsDashboard starts a node whose agent alice has opened room "ops", and
// returns the net, a context that ends after timeout, a client of the
// node, the room, and the node's dashboard.
func opsDashboard(t *testing.T, timeout time.Duration) (*nodetest.Net, context.Context, *localapi.Client, localapi.OpenRoomResult, localapi.UIInfo) {
	t.Helper()
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	t.Cleanup(func() { c0.Close() })
	registered(t, ctx, c0, "alice")
	room, err := c0.OpenRoom(ctx, "alice", localapi.OpenRoomRequest{Name: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	return nt, ctx, c0, room, info
}

// openOps opens the dashboard at url in a browser, opens room there, and
// counts the page's fetches (countFetches).
func openOps(t *testing.T, url, room string) context.Context {
	t.Helper()
	b := browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(url))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room))
	waitJS(t, b, 30*time.Second, `document.getElementById("roomname").textContent.includes("ops")`, "the room open")
	eval[bool](t, b, countFetches)
	return b
}

// A double click on "Post" (or Enter pressed twice while the node
// answers) posts the message once. Before, the form kept its text and its
// button enabled while the first post was under way (a proof round trip
// and the say), so the second submit sent the same text again and the room
// got two copies, which every member read; now the button is disabled and
// the form's submits are ignored until the post is answered.
func TestDashboardDoubleSubmitPostsOnce(t *testing.T) {
	nt, ctx, c0, room, info := opsDashboard(t, 2*time.Minute)
	b := openOps(t, info.URL, room.RoomID)

	// The user types a line and double-clicks Post.
	const text = "deploy now"
	eval[bool](t, b, fmt.Sprintf(`(() => { document.getElementById("text").value = %q; const s = document.getElementById("send"); s.click(); s.click(); return true })()`, text))
	waitJS(t, b, 30*time.Second, `window.inflight === 0 && document.getElementById("text").value === ""`, "the page's requests to end")
	var n int
	nt.WaitFor(30*time.Second, func() bool {
		es, err := c0.Log(ctx, room.RoomID, 0, "")
		if err != nil {
			return false
		}
		n = 0
		for _, e := range es {
			if e.Text == text && e.From == "human@"+nt.ID(0).String() {
				n++
			}
		}
		return n > 0
	}, "the post in the room")
	if n != 1 {
		posts := eval[int](t, b, `window.posts`)
		t.Fatalf("one double-clicked Post put %d copies of %q in the room (%d POSTs sent)", n, text, posts)
	}
}

// The Enter that ends an input method's composition posts nothing. A user
// writing Japanese, Chinese or Korean presses Enter to choose the
// characters composed; the browser sends that keydown as key "Enter" with
// isComposing set (keyCode 229). Before, the page's handler posted at once
// whatever the box held, mid-sentence; now it leaves such an Enter alone.
func TestDashboardEnterOfCompositionDoesNotPost(t *testing.T) {
	nt, ctx, c0, room, info := opsDashboard(t, 2*time.Minute)
	b := openOps(t, info.URL, room.RoomID)
	const composing = "明日の"
	// The keydown Chromium sends for the Enter that ends a composition.
	sent := eval[bool](t, b, fmt.Sprintf(`(() => {
	  const box = document.getElementById("text");
	  box.focus(); box.value = %q;
	  box.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", code: "Enter", keyCode: 229, isComposing: true, bubbles: true, cancelable: true}));
	  return window.inflight > 0;
	})()`, composing))
	if sent {
		nt.WaitFor(30*time.Second, func() bool {
			es, err := c0.Log(ctx, room.RoomID, 0, "")
			return err == nil && slices.ContainsFunc(es, func(e localapi.Event) bool { return e.Text == composing })
		}, "the half-written text in the room")
		t.Fatalf("the Enter that ended a composition posted the half-written %q to the room", composing)
	}
}
