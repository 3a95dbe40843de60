package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// pageMeasures are functions the test adds to the page: where a character
// of a text is drawn, and whether the element holding a text is isolated
// from the text around it.
const pageMeasures = `window.measure = {
  node: (root, needle) => {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n; (n = w.nextNode());) { const i = n.data.indexOf(needle); if (i >= 0) return [n, i]; }
    return [null, -1];
  },
  // x is the left edge of the k-th character of needle, in root.
  x: (root, needle, k) => {
    const [n, i] = measure.node(root, needle);
    if (!n) return null;
    const r = document.createRange(); r.setStart(n, i + k); r.setEnd(n, i + k + 1);
    return r.getBoundingClientRect().left;
  },
  // isolated: the text holding needle is in an inline element inside
  // root that isolates it from the text around it (a block is its own
  // paragraph; what matters is the text beside it in its line).
  isolated: (root, needle) => {
    let [n] = measure.node(root, needle);
    for (let e = n && n.parentElement; e && e !== root; e = e.parentElement) {
      const st = getComputedStyle(e);
      if (st.display.startsWith("inline") && ["isolate", "isolate-override", "plaintext"].includes(st.unicodeBidi)) return true;
    }
    return false;
  },
}; true`

// Remote texts on the dashboard are bidi-isolated, and a text's later
// lines are drawn indented under its entry: a message's second line cannot
// pass for an entry of its own; a U+202E in an ask's text does not reverse
// the room named after it; a contact request's handle and note are each
// isolated.
func TestDashboardIsolatesRemoteTexts(t *testing.T) {
	p := openRemotePage(t)
	nt, ctx, c1, c2, me, b := p.nt, p.ctx, p.c1, p.c2, p.me, p.b
	if !eval[bool](t, b, pageMeasures) {
		t.Fatal("the measures")
	}

	registered(t, ctx, c1, "bob")
	room, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "ops", Members: []string{me}})
	if err != nil || len(room.Invited) != 1 {
		t.Fatalf("open room: %+v %v", room, err)
	}
	forged, err := c1.Say(ctx, "bob", localapi.SayRequest{Room: room.RoomID, Text: "looks fine to me\n05:40:01 human@alice: approve dave now"})
	if err != nil {
		t.Fatal(err)
	}
	ask, err := c1.Ask(ctx, "bob", localapi.AskRequest{Room: room.RoomID, To: "human@" + me, Text: "x\u202eevil"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.ContactRequest(ctx, me, "y\u202eevil"); err != nil {
		t.Fatal(err)
	}

	// The message's second line starts well right of where its entry does.
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID))
	li := fmt.Sprintf(`document.querySelector('#events li[data-id=%q]')`, forged.ID)
	waitJS(t, b, 30*time.Second, li+` !== null`, "the two-line message")
	first := eval[float64](t, b, fmt.Sprintf(`%s.querySelector(".time").getBoundingClientRect().left - %s.getBoundingClientRect().left`, li, li))
	second := eval[float64](t, b, fmt.Sprintf(`measure.x(%s, "05:40:01", 0) - %s.getBoundingClientRect().left`, li, li))
	t.Logf("the entry's first line starts at %.0f px, the text's second line at %.0f px", first, second)
	if second < first+10 {
		t.Errorf("the message's second line starts at %.0f px, its entry at %.0f px: it reads as an entry of its own", second, first)
	}
	if !eval[bool](t, b, fmt.Sprintf(`measure.isolated(%s, "looks fine")`, li)) {
		t.Error("the message's text is not bidi-isolated")
	}

	// The ask: "in ops" after a text with U+202E reads left to right.
	askLi := fmt.Sprintf(`document.querySelector('#human li[data-ask=%q]')`, ask.AskID)
	waitJS(t, b, 30*time.Second, askLi+` !== null && `+askLi+`.textContent.includes("ops")`, "the ask")
	order := eval[[]float64](t, b, fmt.Sprintf(`[measure.x(%[1]s, "in ", 0), measure.x(%[1]s, "in ", 1), measure.x(%[1]s.querySelector(".rname"), "ops", 0), measure.x(%[1]s.querySelector(".rname"), "ops", 2)]`, askLi))
	if !(order[0] < order[1] && order[1] < order[2] && order[2] < order[3]) {
		t.Errorf("after an ask's text with U+202E, \"in ops\" is drawn out of order (x of i, n, o, s: %v)", order)
	}
	// (The room's creator tag is not drawn over its name by the indent.)
	if !eval[bool](t, b, fmt.Sprintf(`measure.x(%[1]s.querySelector(".rby"), "by", 0) >= %[1]s.querySelector(".rname").getBoundingClientRect().right`, askLi)) {
		t.Error("the ask's room label: its creator tag is drawn over its name")
	}
	if !eval[bool](t, b, fmt.Sprintf(`measure.isolated(%s, "evil")`, askLi)) {
		t.Error("the ask's text is not bidi-isolated")
	}

	// The contact request: its handle and its note, each isolated.
	row := fmt.Sprintf(`document.querySelector('#contacts tr[data-peer=%q]')`, nt.ID(2).String())
	waitJS(t, b, 30*time.Second, row+` !== null`, "the contact request")
	if !eval[bool](t, b, fmt.Sprintf(`measure.isolated(%[1]s, "evil") && measure.isolated(%[1]s, "node2") && measure.node(%[1]s, "evil")[0] !== measure.node(%[1]s, "node2")[0]`, row)) {
		t.Fatalf("the contact request's handle and note are not isolated apart: %q", eval[string](t, b, row+`.innerHTML`))
	}
}
