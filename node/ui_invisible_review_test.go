package node_test

import (
	"strings"
	"testing"
)

// A look-alike whose name differs from the user's room only by a character
// that shows nothing (a variation selector; CheckName refuses control and
// format characters, not marks) is not labelled: the page compares names byte for byte, so
// both rooms read "api" with no creator and no ID.
func TestReviewDashboardInvisibleLookAlikeUnlabelled(t *testing.T) {
	b, ctx, c1, mine, label := lookAlikePage(t)
	me := eval[string](t, b, `window.parley.node`)
	theirs := openWith(t, b, ctx, c1, me, "carol", "api\ufe0f")
	visible := func(s string) string { return strings.ReplaceAll(s, "\ufe0f", "") }
	if a, z := visible(label(mine)), visible(label(theirs)); a == z {
		t.Fatalf("node 0's room and node 1's look-alike %s both read %q: neither says who created it", theirs, a)
	}
}
