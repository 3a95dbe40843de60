package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// TestHumanPanelClipsAndCaps: the dashboard's human panel holds the first
// humanShown asks to arrive of one node and how many more there are, each text cut as the page
// clips one (2,000 UTF-16 code units or 40 lines, never inside a
// character) with the whole text's size.
func TestHumanPanelClipsAndCaps(t *testing.T) {
	var owed []localapi.Item
	for i := range 120 {
		owed = append(owed, localapi.Item{ID: fmt.Sprint(i), Text: "short"})
	}
	v := humanPanel(owed)
	if len(v.Asks) != humanShown || v.More != 120-humanShown || v.Asks[0].ID != "0" || v.Asks[humanShown-1].ID != fmt.Sprint(humanShown-1) {
		t.Fatalf("120 asks: %d shown, %d more", len(v.Asks), v.More)
	}
	if v.Asks[0].Text != "short" || v.Asks[0].TextBytes != 0 {
		t.Fatalf("a short ask: %+v", v.Asks[0])
	}
	if v := humanPanel(nil); v.Asks == nil || len(v.Asks) != 0 || v.More != 0 {
		t.Fatalf("no ask: %+v", v)
	}
	for _, c := range []struct {
		name, text, want string
	}{
		{"64 KiB of one letter", strings.Repeat("A", 65536), strings.Repeat("A", askClip)},
		{"as long as shown", strings.Repeat("é", askClip), ""},
		{"an emoji at the edge", strings.Repeat("a", askClip-1) + "😀b", strings.Repeat("a", askClip-1)},
		{"emoji count twice", strings.Repeat("😀", askClip), strings.Repeat("😀", askClip/2)},
		{"50 lines", strings.Repeat("line\n", 50), strings.Repeat("line\n", askClipLines-1) + "line"},
	} {
		got := humanPanel([]localapi.Item{{ID: "x", Text: c.text}}).Asks[0]
		switch {
		case c.want == "" && (got.Text != c.text || got.TextBytes != 0):
			t.Errorf("%s: clipped to %d bytes (%d)", c.name, len(got.Text), got.TextBytes)
		case c.want != "" && (got.Text != c.want || got.TextBytes != len(c.text)):
			t.Errorf("%s: %d bytes, %d lines, size %d; want %d bytes, size %d", c.name, len(got.Text), strings.Count(got.Text, "\n"), got.TextBytes, len(c.want), len(c.text))
		}
	}
}

// TestHumanPanelFairShare: the human panel takes the asks by turns of the
// nodes that ask (each node's first to arrive, then each one's second, in
// arrival order within a turn) and shows those it took in arrival order: a
// node that asked 60 times first leaves places for the one ask of a second
// node and the two of a third, and takes the rest; with fewer asks than
// places every ask is shown.
func TestHumanPanelFairShare(t *testing.T) {
	var owed []localapi.Item
	ask := func(id, node string) {
		owed = append(owed, localapi.Item{ID: id, From: "agent@" + node, Text: "may I?"})
	}
	for i := range 60 {
		ask(fmt.Sprint("noisy", i), "N")
	}
	ask("b0", "B")
	ask("c0", "C")
	ask("c1", "C")
	v := humanPanel(owed)
	var got []string
	for _, a := range v.Asks {
		got = append(got, a.ID)
	}
	want := []string{}
	for i := range humanShown - 3 {
		want = append(want, fmt.Sprint("noisy", i))
	}
	want = append(want, "b0", "c0", "c1")
	if !slices.Equal(got, want) || v.More != len(owed)-humanShown {
		t.Fatalf("shown %v, %d more; want %v, %d more", got, v.More, want, len(owed)-humanShown)
	}
	// Many nodes: each one's first ask before any node's second.
	owed = nil
	for i := range 40 {
		ask(fmt.Sprint("x", i), "X")
	}
	for n := range 45 {
		ask(fmt.Sprint("n", n), fmt.Sprint("P", n))
	}
	v = humanPanel(owed)
	got = got[:0]
	for _, a := range v.Asks {
		got = append(got, a.ID)
	}
	want = []string{"x0", "x1", "x2", "x3", "x4"}
	for n := range 45 {
		want = append(want, fmt.Sprint("n", n))
	}
	if !slices.Equal(got, want) || v.More != 35 {
		t.Fatalf("shown %v, %d more; want %v, 35 more", got, v.More, want)
	}
	if v := humanPanel(owed[:humanShown]); len(v.Asks) != humanShown || v.More != 0 {
		t.Fatalf("%d asks: %d shown, %d more", humanShown, len(v.Asks), v.More)
	}
}
