package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// Markup in the texts other nodes write (a room's name and purpose, a
// message, an ask, a contact request's note) is drawn as text: no element
// of theirs appears on the page, no script of theirs runs, no link of
// theirs is made, and the page's CSP reports nothing.
func TestDashboardDrawsRemoteMarkupAsText(t *testing.T) {
	p := openRemotePage(t)
	nt, ctx, c1, c2, me, b := p.nt, p.ctx, p.c1, p.c2, p.me, p.b
	if !eval[bool](t, b, `window.violations = []; document.addEventListener("securitypolicyviolation", e => violations.push(e.violatedDirective + " " + e.blockedURI)); true`) {
		t.Fatal("the CSP listener")
	}

	const (
		name    = `<img src=x onerror="window.pwned='name'">`
		purpose = `<script>window.pwned='purpose'</script><a href="javascript:window.pwned='link'">x</a>`
		text    = "<iframe srcdoc=\"<script>parent.pwned='msg'</script>\"></iframe>\n<svg onload=\"window.pwned='svg'\"></svg> javascript:window.pwned='js' data:text/html,<b>x</b>"
		askText = `<style>*{display:none}</style><b onmouseover="window.pwned='ask'">ask</b>`
		note    = `<a href="data:text/html,<script>alert(1)</script>">note</a>`
	)
	registered(t, ctx, c1, "bob")
	room, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: name, Purpose: purpose, Members: []string{me}})
	if err != nil || len(room.Invited) != 1 {
		t.Fatalf("open room: %+v %v", room, err)
	}
	msg, err := c1.Say(ctx, "bob", localapi.SayRequest{Room: room.RoomID, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	ask, err := c1.Ask(ctx, "bob", localapi.AskRequest{Room: room.RoomID, To: "human@" + me, Text: askText})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.ContactRequest(ctx, me, note); err != nil {
		t.Fatal(err)
	}

	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID))
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`document.querySelector('#events li[data-id=%q]') !== null`, msg.ID), "the message")
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`document.querySelector('#human li[data-ask=%q]') !== null`, ask.AskID), "the ask")
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`document.querySelector('#contacts tr[data-peer=%q]') !== null`, nt.ID(2).String()), "the contact request")
	// Each text is there as it was written, as text.
	for what, s := range map[string]string{"name": name, "purpose": purpose, "message": "<iframe srcdoc=", "ask": askText, "note": note} {
		if !eval[bool](t, b, fmt.Sprintf(`document.body.textContent.includes(%q)`, s)) {
			t.Errorf("the %s is not drawn as its text %q", what, s)
		}
	}
	// Hover over everything, as a user reading the page would.
	eval[bool](t, b, `document.querySelectorAll("body *").forEach(e => e.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}))); true`)
	if n := eval[int](t, b, `document.querySelectorAll("img, iframe, a, script:not(:first-of-type), style:not(:first-of-type), object, embed, b, [onerror], [onload], [onmouseover], [href], [src], [srcdoc]").length`); n != 0 {
		t.Errorf("the page holds %d elements of remote markup: %s", n, eval[string](t, b, `[...document.querySelectorAll("img, iframe, a, script:not(:first-of-type), style:not(:first-of-type), object, embed, b, [onerror], [onload], [onmouseover], [href], [src], [srcdoc]")].map(e => e.outerHTML).join("\n")`))
	}
	if p := eval[string](t, b, `String(window.pwned || "")`); p != "" {
		t.Fatalf("a remote script ran: %s", p)
	}
	if v := eval[[]string](t, b, `violations`); len(v) != 0 {
		t.Fatalf("the page's CSP was violated: %v", v)
	}
	if n := eval[int](t, b, `document.scripts.length`); n != 1 {
		t.Fatalf("the page has %d scripts, want its own one", n)
	}
}
