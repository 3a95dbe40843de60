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

// TestDashboardOwedAsksNotRedrawnByMessages: the "Asked of you" panel held
// every ask the human owes (each text up to 2,000 characters, with no
// content-visibility) and was drawn again whole at each "rooms" event,
// which comes with every event stored in any room (the room list carries
// its event counts); and any change on the page laid the whole panel out
// again (the page's grid sized its row by its columns' contents). A review
// had a member of one shared room ask the human a hundred times (an ask is
// owed an hour; a room has no limit per member) and then keep talking: the
// page was busy 59% of the time. Now the panel is drawn again only when its
// asks or the labels it shows change, entry by entry (kept by ask ID); it
// holds 50 asks (here the member's first 50) and how many more there are, their texts clipped
// by the node (show all reads one whole); its entries are laid out only
// near the screen; and the page's three columns are laid out apart (CSS
// containment, a fixed row). The page is busy about 1% of the time, and
// the panel's entries are the same elements after the messages.
func TestDashboardOwedAsksNotRedrawnByMessages(t *testing.T) {
	const asks = 100
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) { c.AgentPostLimit = -1 }))
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c0, c1 := localapi.NewClient(node.SocketPath(nt.Home(0))), localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer c0.Close()
	defer c1.Close()
	me := nt.ID(0).String()
	registered(t, ctx, c1, "bob")
	room, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "asks", Members: []string{me}})
	if err != nil || len(room.Invited) != 1 {
		t.Fatalf("open room: %+v %v", room, err)
	}
	// Latin and Hebrew letters in turn: each pair is a bidi run of its own.
	text := strings.Repeat("a\u05d0", 1500) // 3,000 characters: the node clips it
	for i := 0; i < asks; i++ {
		if _, err := c1.Ask(ctx, "bob", localapi.AskRequest{Room: room.RoomID, To: "human@" + me, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)
	run(t, b, "a desktop's window", chromedp.EmulateViewport(1280, 800))
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, 2*time.Minute, fmt.Sprintf(`document.getElementById("status").textContent === "live" && document.querySelectorAll("#human li[data-ask]").length === 50 && (document.querySelector("#human li[data-more]") || {}).textContent === "… and %d more (shown: each asking node's earliest, in fair shares)"`, asks-50),
		"the first 50 owed asks on the page, and how many more")
	// The node sends the asks' texts clipped; show all reads one whole.
	first := `document.querySelector("#human li[data-ask]")`
	if got := eval[string](t, b, first+`.querySelector("button.more").textContent`); got != "… show all (4 KiB)" {
		t.Fatalf("the first ask's button reads %q", got)
	}
	eval[bool](t, b, `(() => { window.firstAsk = `+first+`; window.firstAsk.querySelector("button.more").click(); return true })()`)
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`window.firstAsk.querySelector("bdi.text").textContent === %q && window.firstAsk.querySelector("button.more").textContent === "show less"`, text), "the first ask shown all")

	// The page's main thread, watched while the member posts a short message
	// every 250 ms for 10 s (no room is selected: the room itself is not
	// drawn).
	// Each frame the page draws is timed (it draws in requestAnimationFrame),
	// with the layout of what it changed.
	eval[bool](t, b, `(() => { window.busy = 0; const raf = window.requestAnimationFrame.bind(window);
	  window.requestAnimationFrame = f => raf(ts => { const s = performance.now(); try { f(ts); document.documentElement.offsetHeight } finally { window.busy += performance.now() - s } }); return true })()`)
	start := time.Now()
	var last localapi.Posted
	pace := time.NewTicker(250 * time.Millisecond) // the member's pace, not a wait
	defer pace.Stop()
	for i := 0; time.Since(start) < 10*time.Second; i++ {
		if last, err = c1.Say(ctx, "bob", localapi.SayRequest{Room: room.RoomID, Text: fmt.Sprintf("hello %d", i)}); err != nil {
			t.Fatal(err)
		}
		<-pace.C
	}
	waitJS(t, b, 2*time.Minute, fmt.Sprintf(`!!window.parley.seen[%q]`, last.ID), "the last message on the page")
	took := time.Since(start)
	busy := time.Duration(eval[float64](t, b, `window.busy`) * float64(time.Millisecond))
	t.Logf("in %v of short messages the page was busy %v drawing", took.Round(time.Millisecond), busy.Round(time.Millisecond))
	if busy > took/4 {
		t.Fatalf("with %d asks owed the page was busy %v of %v as short messages came in (the panel drawn or laid out again at each message)", asks, busy.Round(time.Millisecond), took.Round(time.Millisecond))
	}
	if !eval[bool](t, b, first+` === window.firstAsk && window.firstAsk.isConnected`) {
		t.Fatal("the panel's first ask was drawn again as messages came in")
	}
}

// TestDashboardLongTextsKeepPanelButtonsInView: a stranger's contact
// request with a note of 500 letters and no space (consent.MaxNote allows
// it) made the contacts table 6,148 px wide in a panel of 440: the note was
// drawn whole, in one run, in an auto-sized table, and the state and
// buttons of every row, a real contact's "revoke" with them, were out of
// sight until the user scrolled the panel sideways (found by a review; an
// agent's working_on, a board claim's path and note and an organisation's
// name were drawn so too). Now such texts are drawn in pieces that may
// break, and the panels' tables lay out fixed, with set widths for the
// state and button columns: the contacts' buttons, and those of an agent
// working on 500 letters, stay in the panel.
func TestDashboardLongTextsKeepPanelButtonsInView(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c0, c2 := localapi.NewClient(node.SocketPath(nt.Home(0))), localapi.NewClient(node.SocketPath(nt.Home(2)))
	defer c0.Close()
	defer c2.Close()
	me := nt.ID(0).String()
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)
	run(t, b, "a desktop's window", chromedp.EmulateViewport(1280, 800))
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	friend := fmt.Sprintf(`document.querySelector('#contacts tr[data-peer=%q] button')`, nt.ID(1).String())
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live" && `+friend+` !== null`, "the contact's revoke button")
	visible := func(sel string) string {
		return fmt.Sprintf(`(() => { const a = document.querySelector("aside").getBoundingClientRect(), r = %s.getBoundingClientRect(); return r.left >= a.left && r.right <= a.right })()`, sel)
	}
	if !eval[bool](t, b, visible(friend)) {
		t.Fatal("the contact's revoke button is out of the panel before any request")
	}

	if _, err := c2.ContactRequest(ctx, me, strings.Repeat("W", 500)); err != nil {
		t.Fatal(err)
	}
	stranger := fmt.Sprintf(`document.querySelector('#contacts tr[data-peer=%q] button')`, nt.ID(2).String())
	waitJS(t, b, 30*time.Second, stranger+` !== null`, "the stranger's request")
	width := eval[float64](t, b, `document.getElementById("contacts").getBoundingClientRect().width`)
	panel := eval[float64](t, b, `document.querySelector("aside").getBoundingClientRect().width`)
	t.Logf("the contacts table is %.0f px wide in a panel of %.0f px", width, panel)
	if !eval[bool](t, b, visible(friend)) || !eval[bool](t, b, visible(stranger)) {
		t.Fatalf("a stranger's 500-letter note pushed the contacts' buttons out of the panel (table %.0f px wide, panel %.0f px): the contact's revoke at x=%.0f", width, panel,
			eval[float64](t, b, friend+`.getBoundingClientRect().left`))
	}

	// An agent of this node working on 500 letters: its mute and kill
	// buttons stay in the panel.
	if _, err := c0.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "alice", WorkingOn: strings.Repeat("W", 500)}); err != nil {
		t.Fatal(err)
	}
	agent := fmt.Sprintf(`document.querySelectorAll('#agents tr[data-agent=%q] button')`, "alice@"+me)
	waitJS(t, b, 30*time.Second, agent+`.length === 2`, "the agent's buttons")
	width = eval[float64](t, b, `document.getElementById("agents").getBoundingClientRect().width`)
	t.Logf("the agents table is %.0f px wide in a panel of %.0f px", width, panel)
	for i := range 2 {
		if !eval[bool](t, b, visible(fmt.Sprintf("%s[%d]", agent, i))) {
			t.Fatalf("an agent working on 500 letters pushed its button %d out of the panel (table %.0f px wide, panel %.0f px)", i, width, panel)
		}
	}
}
