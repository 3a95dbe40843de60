package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// TestHumanPanelClipsAndCaps: the dashboard's human panel holds the oldest
// humanShown asks and how many more there are, each text cut as the page
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
