package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestHumanPanelLongWordsStayInView: what a member of a shared room
// writes may hold long words it controls: its agent's name (64 letters of
// [a-z0-9._-] are allowed), its room's name (200 bytes) and any word of an
// ask (a piece of an ask's text that ends at a space is a plain text node,
// so a word under 256 letters is one unbreakable run). In the "Asked of
// you" panel each is wholly inside its entry (#human li may break a word
// anywhere, as #events li may); in the room list the room's name wraps and
// its unread count stays in view; the audit table lays out fixed, so the
// side panel does not grow sideways. A review found them cut off: the
// panel's entries have content-visibility:auto (paint containment), so
// what went past an entry's edge was clipped where no scrolling reached it
// (the agent's name hid the "@node" that says who asks, and pushed a short
// ask's whole text out of sight); and the room list and the audit table
// grew to about 1,950 px for the room's name, the room's unread count out
// of view.
func TestHumanPanelLongWordsStayInView(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c0, c1 := localapi.NewClient(node.SocketPath(nt.Home(0))), localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer c0.Close()
	defer c1.Close()
	me := nt.ID(0).String()
	agent := strings.Repeat("m", 64)
	if _, err := c1.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: agent}); err != nil {
		t.Fatal(err)
	}
	registered(t, ctx, c1, "bob")
	room, err := c1.OpenRoom(ctx, agent, localapi.OpenRoomRequest{Name: strings.Repeat("R", 200), Members: []string{me}})
	if err != nil {
		t.Fatal(err)
	}
	short, err := c1.Ask(ctx, agent, localapi.AskRequest{Room: room.RoomID, To: "human@" + me, Text: "may I deploy now?"})
	if err != nil {
		t.Fatal(err)
	}
	plans, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "plans", Members: []string{me}})
	if err != nil {
		t.Fatal(err)
	}
	long, err := c1.Ask(ctx, "bob", localapi.AskRequest{Room: plans.RoomID, To: "human@" + me, Text: "approve " + strings.Repeat("W", 120) + "TAIL please"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)
	run(t, b, "a desktop's window", chromedp.EmulateViewport(1280, 800))
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, time.Minute, `document.getElementById("status").textContent === "live" && document.querySelectorAll("#human li[data-ask] .rname").length === 2`, "the asks in the panel")
	t.Logf("the side panel: %s", eval[string](t, b, `(() => { const a = document.querySelector("aside"), li = document.querySelector("#human li[data-ask]");
	  const w = id => id + " " + Math.round(document.getElementById(id).getBoundingClientRect().width);
	  return "aside " + a.clientWidth + " px, scrolls to " + a.scrollWidth + "; the entry " + li.clientWidth + " px, its content " + li.scrollWidth +
	    "; tables " + ["audit", "usage", "agents", "contacts"].map(w).join(", ") + "; nav " + document.querySelector("nav").clientWidth + " px, scrolls to " + document.querySelector("nav").scrollWidth })()`))
	for _, c := range []struct{ what, ask, sel string }{
		{"the asker (its agent's name and node)", short.AskID, `bdi.from`},
		{"a short ask's text after that name", short.AskID, `bdi.text`},
		{"the room's name", short.AskID, `.rname`},
		{"an ask's text with a word of 123 letters", long.AskID, `bdi.text`},
	} {
		e := fmt.Sprintf(`document.querySelector('#human li[data-ask=%q] %s')`, c.ask, c.sel)
		js := fmt.Sprintf(`(() => { const li = document.querySelector('#human li[data-ask=%q]'); return %s.getBoundingClientRect().right - li.getBoundingClientRect().right })()`, c.ask, e)
		if over := eval[float64](t, b, js); over > 1 {
			t.Errorf("%s runs %.0f px past the panel's entry, cut off out of reach (%q)", c.what, over, eval[string](t, b, e+`.textContent`))
		}
	}

	// The room list: a new message in the room with the long name counts
	// as unread there, and the count is in view.
	if _, err := c1.Say(ctx, agent, localapi.SayRequest{Room: room.RoomID, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	badge := fmt.Sprintf(`document.querySelector('#rooms li[data-room=%q] .badge')`, room.RoomID)
	waitJS(t, b, time.Minute, "!!"+badge, "the room's unread count in the room list")
	for _, c := range []struct{ what, js string }{
		{"the room list's unread count runs past the list's right edge", `(() => { const n = document.querySelector("nav"), r = n.getBoundingClientRect();
		  return ` + badge + `.getBoundingClientRect().right - (r.left + n.clientLeft + n.clientWidth) })()`},
		{"the room list scrolls sideways", `(() => { const n = document.querySelector("nav"); return n.scrollWidth - n.clientWidth })()`},
		{"the audit table is wider than the side panel", `(() => { const a = document.querySelector("aside"); return document.getElementById("audit").getBoundingClientRect().width - a.clientWidth })()`},
		{"the side panel scrolls sideways", `(() => { const a = document.querySelector("aside"); return a.scrollWidth - a.clientWidth })()`},
	} {
		if over := eval[float64](t, b, c.js); over > 1 {
			t.Errorf("%s by %.0f px", c.what, over)
		}
	}
	if got := eval[string](t, b, fmt.Sprintf(`document.querySelector('#rooms li[data-room=%q] .rname').textContent`, room.RoomID)); got != strings.Repeat("R", 200) {
		t.Errorf("the room list names the room %q, not its whole name", got)
	}
}
