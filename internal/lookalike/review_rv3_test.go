package lookalike_test

import (
	"testing"

	"github.com/parley-mesh/parley/internal/lookalike"
)

// TestReviewGeneralMarksLeftInKeys: the general-purpose combining marks
// are to be left out of keys, but five of them have a prototype in the
// confusables data outside those blocks (U+030D → U+0670, U+0317 → U+0650,
// U+1AB4 and U+20DB → U+06DB, U+1DEE → U+2DEC), which key() keeps, as it
// strips marks only after the skeleton: "bob" with an acute accent below
// does not read as "bob", though "bob" with a dot below does.
func TestReviewGeneralMarksLeftInKeys(t *testing.T) {
	for _, m := range []rune{'\u0323', '\u030d', '\u0317', '\u1ab4', '\u1dee', '\u20db'} {
		for _, h := range []string{"bob" + string(m), "alic" + string(m) + "e"} {
			w := "bob"
			if h[0] == 'a' {
				w = "alice"
			}
			if !lookalike.Same(h, w) {
				t.Errorf("%+q (%U, a general-purpose mark) does not read as %q: keys %+q", h, m, w, lookalike.Keys(h))
			}
		}
	}
}

// TestReviewPrototypeMarksOnLatin: the marks the confusables data gives
// as what U+0317 and U+030D read as (U+0650 ARABIC KASRA, U+0670 ARABIC
// LETTER SUPERSCRIPT ALEF), and U+06DB (three dots above, U+20DB's
// prototype), sit on a Latin letter as those marks do, yet stay in keys as
// marks of a script of their own: "bob" followed by any of them reads as
// no one, and shows bare beside the contact bob.
func TestReviewPrototypeMarksOnLatin(t *testing.T) {
	for _, m := range []rune{'\u0650', '\u0670', '\u06db'} {
		if h := "bob" + string(m); !lookalike.Same(h, "bob") {
			t.Errorf("%+q (%U on a Latin letter) does not read as \"bob\": keys %+q", h, m, lookalike.Keys(h))
		}
	}
}
