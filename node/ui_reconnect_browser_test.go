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

// cutNextStream makes the page's next /ui/stream end right after the
// node's hello and room list, before the rooms' events: a stream that
// breaks during the burst it opens with (the node goes down again, the
// tab is hidden for 5 s while a large burst is under way, the network
// drops).
const cutNextStream = `(() => {
  const real = window.fetch;
  let cut = true;
  window.fetch = function (u, o) {
    const p = real.apply(this, arguments);
    if (!cut || String(u).indexOf("/ui/stream") < 0) return p;
    cut = false;
    return p.then(async (r) => {
      if (!r.ok) return r;
      const rd = r.body.getReader(), dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const x = await rd.read();
        if (x.done) break;
        buf += dec.decode(x.value, { stream: true });
        const i = buf.indexOf("event: rooms");
        const j = i >= 0 ? buf.indexOf("\n\n", i) : -1;
        if (j >= 0) { buf = buf.slice(0, j + 2); break; }
      }
      rd.cancel();
      return new Response(buf, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    });
  };
  return true;
})()`

// TestDashboardTwoReconnectsKeepReadRoomsRead: a reconnect counts as
// unread only the events the page had not held (prior, at the stream's
// hello). Before, the hello of each new stream took as held only what the
// stream before it had sent again (S.seen): when a stream ended after its
// hello and before it sent a room's events again, the next stream's events
// of that room all counted as unread, though the user had read them. Now
// the hello takes what the page holds.
func TestDashboardTwoReconnectsKeepReadRoomsRead(t *testing.T) {
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
	for _, r := range rooms {
		clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, r))
		waitJS(t, b, 30*time.Second, fmt.Sprintf(`window.parley.sel === %q && %s === ""`, r, badge(r)), "room "+r+" read")
	}
	waitJS(t, b, 30*time.Second, badge(rooms[0])+` === "" && `+badge(rooms[1])+` === ""`, "no unread count")
	streams := eval[int](t, b, `window.parley.streams`)
	if !eval[bool](t, b, cutNextStream) {
		t.Fatal("fetch not wrapped")
	}

	nt.Crash(0)
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent !== "live"`, "the page to see the node gone")
	nt.Restart(0)
	c1 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c1.Close()
	// The cut stream says hello; the one after it sends everything again.
	waitJS(t, b, 60*time.Second, fmt.Sprintf(`window.parley.streams >= %d && document.getElementById("status").textContent === "live"`, streams+2), "the page to reconnect twice")
	registered(t, ctx, c1, "alice")
	posted, err := c1.Say(ctx, "alice", localapi.SayRequest{Room: rooms[1], Text: "after the restart"})
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!window.parley.seen[%q] && (window.parley.events[%q] || []).length >= 3`, posted.ID, rooms[0]), "the new message and the read room's events on the page")
	if got := eval[string](t, b, badge(rooms[0])); got != "" {
		t.Fatalf("the room read before the reconnects shows %q unread after them, and no message came into it", got)
	}
}
