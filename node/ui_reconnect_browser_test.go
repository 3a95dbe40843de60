package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
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
	nt, ctx, _, rooms, b := readTwoRooms(t)
	badge := unreadBadge
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
