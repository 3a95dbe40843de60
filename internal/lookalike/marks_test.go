package lookalike_test

import (
	"testing"

	"github.com/parley-mesh/parley/internal/lookalike"
)

// TestGeneralMarksMappedToScriptMarksLeftOut: five general-purpose
// combining marks have a prototype in the confusables data that is a mark
// of a script of its own (U+030D → U+0670, U+0317 → U+0650, U+1AB4 and
// U+20DB → U+06DB, U+1DEE → U+2DEC). Before, keys left the general-purpose
// marks out only after the skeleton, so those five stayed in keys as their
// prototypes: "bob" with an acute accent below did not read as "bob",
// though "bob" with a dot below did. They are left out before the mapping
// too now, and read as the handle without them.
func TestGeneralMarksMappedToScriptMarksLeftOut(t *testing.T) {
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

// TestScriptMarksOnAnotherScriptLeftOut: a mark of a script of its own on
// a letter of another (an Arabic kasra U+0650, superscript alef U+0670 or
// three dots U+06DB, a Devanagari vowel sign, Japanese voicing marks on a
// Latin letter) sits on it as a general-purpose mark does. Before, keys
// kept them: "bob" followed by any of them read as no one, and showed bare
// beside the contact bob. Now such a mark is left out of keys; on a letter
// of its script it stays, and tells handles apart.
func TestScriptMarksOnAnotherScriptLeftOut(t *testing.T) {
	for _, m := range []rune{'\u0650', '\u0670', '\u06db', '\u0941', '\u3099', '\u0951'} {
		if h := "bob" + string(m); !lookalike.Same(h, "bob") {
			t.Errorf("%+q (%U on a Latin letter) does not read as \"bob\": keys %+q", h, m, lookalike.Keys(h))
		}
	}
	for _, p := range [][2]string{
		{"\u0628\u0650", "\u0628"},             // Arabic beh with and without kasra
		{"\u304b\u3099", "\u304b"},             // が and か (NFD)
		{"\u0915\u0941", "\u0915"},             // कु and क
		{"\u05e9\u05b8\u05dc", "\u05e9\u05dc"}, // Hebrew with a qamats and without
	} {
		if lookalike.Same(p[0], p[1]) {
			t.Errorf("%+q reads as %+q: a mark on a letter of its script is left out (keys %+q)", p[0], p[1], lookalike.Keys(p[0]))
		}
	}
}
