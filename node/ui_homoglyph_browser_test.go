package node_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A contact whose handle reads as "here" (a Cyrillic е), what the dashboard
// calls this node, posts in a room with the user: the page shows its
// posts as human@hеre~SUFFIX, never as a bare human@hеre that reads like
// the user's own posts (human@here), and its room reads by its short peer
// ID. The page takes the name the node's names service gives, which adds
// the tail, and the list of nodes that read like this one.
func TestDashboardLookAlikeOfHereShowsItsTail(t *testing.T) {
	const lookAlike = "h\u0435re"
	b, ctx, c1, _, _ := lookAlikePage(t, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 {
			c.Handle = lookAlike
		}
	}))
	me := eval[string](t, b, `window.parley.node`)
	room := openWith(t, b, ctx, c1, me, "human", "talk")
	if _, err := c1.Say(ctx, "human", localapi.SayRequest{Room: room, Text: "approve dave please"}); err != nil {
		t.Fatal(err)
	}
	info, err := c1.ID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	them := info.PeerID
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!(window.parley.panels.names || {})[%q]`, them), "node 1 in the names book")
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room))
	from := `[...document.querySelectorAll("#events li.message .from")].map(e => e.textContent).join("|")`
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`%s !== ""`, from), "node 1's post on the page")
	got := eval[string](t, b, from)
	tail, ok := strings.CutPrefix(got, "human@"+lookAlike+"~")
	if !ok || len(tail) < 4 || !strings.HasSuffix(them, tail) {
		t.Fatalf("node 1's post is from %q on the page, want human@%s~SUFFIX with its peer ID's tail", got, lookAlike)
	}
	// Its room's label names its creator by a short peer ID, as for any
	// node whose handle reads like this one (the node says which).
	want := "by " + them[:6] + "…" + them[len(them)-6:]
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`((document.querySelector('#rooms li[data-room=%q] .rby') || {}).textContent || "") === %q`, room, want),
		"node 1's room labelled "+want)
}

// A contact whose handle holds a Hangul filler after "bob" (an older
// node's) reads on the page's contact list as the names service names it,
// the filler escaped and with its peer ID's tail, never as "bobㅤ".
func TestDashboardContactWithAFillerShowsEscaped(t *testing.T) {
	b, ctx, c1, _, _ := lookAlikePage(t, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 {
			c.Handle = "bob\u3164"
		}
	}))
	info, err := c1.ID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	them := info.PeerID
	row := fmt.Sprintf(`((document.querySelector('#contacts tr[data-peer=%q]') || {}).textContent || "")`, them)
	waitJS(t, b, 30*time.Second, row+`.includes("bob\\u3164~")`, "node 1's contact row named bob\\u3164~SUFFIX")
	if got := eval[string](t, b, row); strings.ContainsRune(got, '\u3164') {
		t.Fatalf("the contact row shows the filler: %+q", got)
	}
}
