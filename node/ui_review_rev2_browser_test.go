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

// TestReviewHumanPanelLongWordsStayInView: the "Asked of you" panel draws
// what another node wrote with no break allowed inside a word (#human li
// has no overflow-wrap, unlike #events li; a piece of an ask's text that
// ends at a space is a plain text node, so a word under 256 letters is one
// unbreakable run), and since its entries have content-visibility:auto
// (paint containment, d412a90) what goes past an entry's edge is cut off
// where no scrolling reaches it (before, the side panel scrolled sideways).
// A member of a shared room controls such words: its agent's name (64
// letters of [a-z0-9._-] are allowed), which hides the "@node" that says
// who asks and pushes a short ask's whole text out of sight; its room's
// name (200 bytes); and any word of an ask. Each must be wholly inside its
// entry.
func TestReviewHumanPanelLongWordsStayInView(t *testing.T) {
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
}
