// Package lookalike tells when handles read the same to a person, so that
// a node whose handle only looks like another's (a Cyrillic "а" for a
// Latin "a", a digit 0 for a letter O, an invisible filler after a name)
// can be shown apart from it.
//
// Two handles read the same when they share a key (Keys). A key is the
// confusable skeleton of Unicode Technical Standard #39 (section 4: NFD,
// default-ignorable characters removed, each character replaced by its
// prototype in the Unicode confusables data, NFD again) of the handle
// case-folded, with runs of white space read as one space and anything
// from the first '~' on left out (display names add "~SUFFIX" to a handle,
// so a handle may not bring one of its own). The confusables data is Unicode's
// confusables.txt (version 13.0.0), compiled into
// github.com/mtibben/confusables.
package lookalike

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Invisible reports characters that show nothing, or nothing a reader can
// tell: format characters (bidi controls, zero-width spaces and joiners,
// the soft hyphen, tags), the other default-ignorable code points of
// Unicode (Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the combining
// grapheme joiner…) and the blank Braille pattern U+2800. In a handle they
// only serve to make it read like another; variation selectors, which
// choose how an emoji shows, are not among them.
func Invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || r == '\u2800'
}

// ignorable reports what a skeleton leaves out: the invisible characters
// and variation selectors (Unicode's Default_Ignorable_Code_Point, and the
// blank Braille pattern).
func ignorable(r rune) bool {
	return Invisible(r) || unicode.Is(unicode.Variation_Selector, r)
}

// skeleton is s's confusable skeleton (UTS #39, section 4).
func skeleton(s string) string {
	s = strings.Map(func(r rune) rune {
		if ignorable(r) {
			return -1
		}
		return r
	}, norm.NFD.String(s))
	return confusables.Skeleton(s)
}

// Keys are what handle h reads as: handles that share a key read the
// same. There are two, often equal: the skeleton of h case-folded (so
// "ALICE" reads as "alice"), and the skeleton of h's skeleton case-folded
// (so "AIice", with a capital I, reads as "alice" too: folded first, its I
// would become an i).
func Keys(h string) []string {
	h = norm.NFKC.String(h)
	a, b := key(skeleton(cases.Fold().String(h))), key(skeleton(cases.Fold().String(skeleton(h))))
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// key is a skeleton as a key: runs of white space read as one space, and
// anything from the first '~' on left out.
func key(k string) string {
	if i := strings.IndexByte(k, '~'); i > 0 {
		k = k[:i]
	}
	return strings.Join(strings.Fields(k), " ")
}

// Same reports whether handles a and b read the same (share a key).
func Same(a, b string) bool {
	for _, x := range Keys(a) {
		for _, y := range Keys(b) {
			if x == y {
				return true
			}
		}
	}
	return false
}

// ReadsAs reports whether a handle whose key is k reads as one whose key
// is p, or as p followed by more that a reader may take for a remark: k,
// after any leading marks that are neither letters nor digits, starts with
// p, and what follows (if anything) does not begin with a letter, a digit
// or a combining mark. So "here. (you, this node)" and "(alice)" read as
// "here" and "alice"; "alicea" and "alice2" do not read as "alice".
func ReadsAs(k, p string) bool {
	k, p = strings.TrimLeftFunc(k, notWord), strings.TrimLeftFunc(p, notWord)
	if p == "" || !strings.HasPrefix(k, p) {
		return k == p
	}
	rest := k[len(p):]
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return notWord(r)
}

// notWord reports characters that do not continue a word.
func notWord(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.M, r)
}
