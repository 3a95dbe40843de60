package node_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A peer whose handle is "you" (which the node names you~SUFFIX, as it
// reads as this node) makes rooms whose names read like the user's "api"
// once folded (case, full-width letters, invisible characters): its rooms
// show their creator by short peer ID, never "by you"; the two rooms
// of that peer would read the same, so both show the start of their IDs;
// the user's own room reads just "api", in the list and the header.
func TestDashboardRoomLabelsFoldLookAlikes(t *testing.T) {
	b, ctx, c1, mine, label := lookAlikePage(t, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 {
			c.Handle = "you"
		}
	}))
	me := eval[string](t, b, `window.parley.node`)
	upper := openWith(t, b, ctx, c1, me, "carol", "API")
	wide := openWith(t, b, ctx, c1, me, "dave", "\uff41\ufe0fp\u034fi\ufe0e")
	them := eval[string](t, b, fmt.Sprintf(`window.parley.rooms.find(r => r.room_id === %q).creator`, upper))
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`((window.parley.panels.names || {})[%q] || "").startsWith("you~")`, them), "node 1's name in the names book")
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`(window.parley.panels.like_self || []).includes(%q)`, them), "node 1 among the nodes that read like this one")
	short := them[:6] + "…" + them[len(them)-6:]
	for _, r := range []struct{ id, name string }{{upper, "API"}, {wide, "\uff41\ufe0fp\u034fi\ufe0e"}} {
		want := r.name + " by " + short + " " + r.id[:8]
		waitJS(t, b, 30*time.Second, fmt.Sprintf(`(document.querySelector('#rooms li[data-room=%q] span') || {}).textContent === %q`, r.id, want),
			"node 1's room "+r.id+" labelled "+want)
	}
	if got := label(mine); got != "api" {
		t.Fatalf("node 0's own room reads %q, want just its name", got)
	}
	if all := eval[string](t, b, `document.getElementById("rooms").textContent`); strings.Contains(all, "by you") {
		t.Fatalf("the room list says \"by you\": %q", all)
	}
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, mine))
	waitJS(t, b, 30*time.Second, `document.getElementById("roomname").textContent === "api" && !document.querySelector("#roomname .rby")`,
		"the header naming node 0's room as the list does")
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, wide))
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`document.querySelector("#roomname .rby") && document.querySelector("#roomname .rby").textContent === %q`, "by "+short),
		"the header naming node 1's room with its creator")
}
