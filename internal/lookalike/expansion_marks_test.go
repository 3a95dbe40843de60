package lookalike_test

import (
	"strings"
	"testing"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/lookalike"
)

// TestReadsAsPastFortyEightWords: one character can make four words of a
// key (U+FDFA is "صلى الله عليه وسلم" once NFKC), so a handle of fewer
// than discovery.MaxText bytes can put "bob" past the 48th word. Before,
// Index.Find looked only at a key's first 48 words (and Add skipped longer
// cores), so "ﷺ…ﷺ bob" read as no one; now Find walks every word of the
// key, and it reads as "bob" with more around it.
func TestReadsAsPastFortyEightWords(t *testing.T) {
	for _, w := range []string{"bob", "you"} {
		h := strings.Repeat("\ufdfa", 19) + " " + w
		if len(h) > discovery.MaxText {
			t.Fatalf("%d bytes: longer than a handle may be", len(h))
		}
		k := lookalike.Keys(h)[0]
		if !lookalike.ReadsAs(k, w) {
			t.Errorf("a %d-byte handle of 19 U+FDFA and %q (its key has %d words) does not read as %q", len(h), w, strings.Count(k, " ")+1, w)
		}
	}
}

// TestOwnScriptMarkOnLookAlikeLetter: a general-purpose mark is read
// through on any letter ("bõb" reads as "bob"), and a mark of a script of
// its own on a letter of another script too. Before, a mark on a letter of
// its own script stayed in the key even when that letter's prototype is a
// Latin one: a Cyrillic о with a titlo (U+0483, a small wave above, as a
// tilde), an Arabic heh with a kasra, an Arabic-Indic five with a kasra, a
// Devanagari zero with the vowel sign e, a Cyrillic о with a combining be
// above each read as no one, and showed bare beside the contact bob. Now a
// mark is left out also when the letter's prototype is of a script it
// does not belong with, and each reads as "bob".
func TestOwnScriptMarkOnLookAlikeLetter(t *testing.T) {
	if !lookalike.Same("bo\u0303b", "bob") || !lookalike.Same("b\u043e\u0303b", "bob") {
		t.Fatal("control: a tilde on o (Latin or Cyrillic) is not read through")
	}
	for _, h := range []string{
		"b\u043e\u0483b", // Cyrillic о + titlo
		"b\u043e\u0487b", // Cyrillic о + pokrytie
		"b\u043e\u2de0b", // Cyrillic о + combining be above
		"b\u0647\u0650b", // Arabic heh + kasra
		"b\u0665\u0650b", // Arabic-Indic five + kasra
		"b\u0966\u0947b", // Devanagari zero + vowel sign e
	} {
		if base := strings.Map(func(r rune) rune {
			if r == 'b' || r < 0x400 {
				return r
			}
			if r == 0x483 || r == 0x487 || r == 0x2de0 || r == 0x650 || r == 0x947 {
				return -1
			}
			return r
		}, h); !lookalike.Same(base, "bob") {
			t.Fatalf("control: %+q does not read as bob without its mark", base)
		}
		if !lookalike.Same(h, "bob") {
			t.Errorf("%+q reads as no one (keys %+q), though without its mark it reads as \"bob\"", h, lookalike.Keys(h))
		}
	}
}

// TestTatweelAfterAHandle: "bob_" reads as "bob" with more around it.
// Before, "bob" and an Arabic tatweel U+0640 (a kashida: a line along the
// baseline, as an underscore) was one word of its own, and showed bare
// beside the contact bob; now keys leave the tatweel out, and it reads as
// "bob".
func TestTatweelAfterAHandle(t *testing.T) {
	if k := lookalike.Keys("bob_")[0]; !lookalike.ReadsAs(k, "bob") {
		t.Fatal("control: bob_ does not read as bob")
	}
	if k := lookalike.Keys("bob\u0640")[0]; !lookalike.ReadsAs(k, "bob") {
		t.Errorf("\"bob\\u0640\" (key %+q) does not read as \"bob\"", k)
	}
}
