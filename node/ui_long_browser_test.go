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
	"github.com/parley-mesh/parley/rooms"
)

// A room of 100 messages of 64 KiB with no space in them, posted by another
// member, opens on the dashboard in seconds and the page answers meanwhile
// (a browser wraps one such run in time that grows with the square of its
// length: the page used to be dead for minutes); the room opens at its
// latest message; a long text shows its start and a button that shows it
// all, whole (a surrogate pair is never cut in two); an ask of 64 KiB to
// the human is clipped the same way.
func TestDashboardOpensRoomOfLongTexts(t *testing.T) {
	const n = 100
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
	room, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "long", Members: []string{me}})
	if err != nil || len(room.Invited) != 1 {
		t.Fatalf("open room: %+v %v", room, err)
	}
	long := strings.Repeat("A", rooms.MaxBody)
	// Words, then a run of emoji one character off a piece's boundary, then
	// a run of letters, and lines: each piece of it drawn is checked.
	mixed := strings.Repeat("word ", 500) + "x" + strings.Repeat("\U0001F600", 300) + "\n" + strings.Repeat("B", 3000) + strings.Repeat("\nline", 50)
	for i := 0; i < n-1; i++ {
		if _, err := c1.Say(ctx, "bob", localapi.SayRequest{Room: room.RoomID, Text: long}); err != nil {
			t.Fatal(err)
		}
	}
	ask, err := c1.Ask(ctx, "bob", localapi.AskRequest{Room: room.RoomID, To: "human@" + me, Text: long})
	if err != nil {
		t.Fatal(err)
	}
	withMixed, err := c1.Say(ctx, "bob", localapi.SayRequest{Room: room.RoomID, Text: mixed})
	if err != nil {
		t.Fatal(err)
	}
	last, err := c1.Say(ctx, "bob", localapi.SayRequest{Room: room.RoomID, Text: long})
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
	waitJS(t, b, 2*time.Minute, fmt.Sprintf(`document.getElementById("status").textContent === "live" && !!window.parley.seen[%q]`, last.ID), "the room's last message on the page")

	// Open the room: the page draws it and answers within seconds.
	start := time.Now()
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID))
	const bound = 10 * time.Second
	li := fmt.Sprintf(`document.querySelector('#events li[data-id=%q]')`, last.ID)
	opened := nodetest.Poll(bound, func() bool {
		c, cancel := context.WithTimeout(b, time.Until(start.Add(bound))+time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[bool](li+` !== null && document.getElementById("events").scrollHeight > 0`))
		return err == nil && v
	})
	took := time.Since(start)
	if !opened {
		t.Fatalf("a room of %d messages of 64 KiB with no space did not open within %v (the page did not answer for %v)", n, bound, took)
	}
	t.Logf("a room of %d messages of 64 KiB with no space opened in %v", n, took)
	answer := time.Now()
	if !eval[bool](t, b, `new Promise(r => requestAnimationFrame(() => setTimeout(() => r(true), 0)))`) || time.Since(answer) > bound {
		t.Fatalf("the page took %v to draw its next frame", time.Since(answer))
	}
	waitJS(t, b, 10*time.Second, fmt.Sprintf(`(() => { const l = document.getElementById("events"), r = %s.getBoundingClientRect(); return r.bottom <= l.getBoundingClientRect().bottom + 1 && r.bottom > l.getBoundingClientRect().top })()`, li), "the room opened at its latest message")

	// The long message shows its start and a button; the button shows it
	// all, as it was sent, and back.
	text := li + `.querySelector("bdi.text")`
	more := li + `.querySelector("button.more")`
	if got := eval[int](t, b, text+`.textContent.length`); got <= 0 || got >= len(long) || !eval[bool](t, b, fmt.Sprintf(`%q.startsWith(%s.textContent)`, long[:4096], text)) {
		t.Fatalf("the 64 KiB message shows %d characters, not its start", got)
	}
	if got := eval[string](t, b, more+`.textContent`); got != "… show all (64 KiB)" {
		t.Fatalf("the 64 KiB message's button reads %q", got)
	}
	start = time.Now()
	clickJS(t, b, fmt.Sprintf(`#events li[data-id=%q] button.more`, last.ID))
	waitJS(t, b, bound, fmt.Sprintf(`%s.textContent === %q && %s.textContent === "show less" && %s.getBoundingClientRect().height > 5000`, text, long, more, li), "the whole text after show all, laid out")
	t.Logf("the whole 64 KiB text was drawn in %v", time.Since(start))
	clickJS(t, b, fmt.Sprintf(`#events li[data-id=%q] button.more`, last.ID))
	waitJS(t, b, 10*time.Second, fmt.Sprintf(`%s.textContent.length < 4096 && %s.textContent.startsWith("…")`, text, more), "the text clipped again after show less")

	// Words, emoji and lines: shown all, the text is the one sent, and no
	// piece of it ends or starts in the middle of a surrogate pair.
	mli := fmt.Sprintf(`document.querySelector('#events li[data-id=%q]')`, withMixed.ID)
	clickJS(t, b, fmt.Sprintf(`#events li[data-id=%q] button.more`, withMixed.ID))
	waitJS(t, b, bound, fmt.Sprintf(`%s.querySelector("bdi.text").textContent === %q`, mli, mixed), "the mixed text shown all")
	if !eval[bool](t, b, fmt.Sprintf(`(() => { const w = document.createTreeWalker(%s.querySelector("bdi.text"), NodeFilter.SHOW_TEXT); for (let x; (x = w.nextNode());) if (/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/.test(x.data)) return false; return true })()`, mli)) {
		t.Fatal("a piece of the mixed text begins or ends in the middle of a surrogate pair")
	}

	// The ask to the human: clipped, with its button.
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`(() => { const a = document.querySelector('#human li[data-ask=%q]'); return !!a && a.querySelector("bdi.text").textContent.length < 4096 && a.querySelector("button.more").textContent === "… show all (64 KiB)" })()`, ask.AskID), "the 64 KiB ask, clipped")
}
