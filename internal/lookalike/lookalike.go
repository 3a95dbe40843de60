// Package lookalike tells when handles read the same to a person, so that
// a node whose handle only looks like another's (a Cyrillic "а" for a
// Latin "a", a digit 0 for a letter O, an invisible filler after a name, a
// small mark under a letter, a remark around it) can be shown apart from it.
//
// Two handles read the same when they share a key (Keys). A key is the
// confusable skeleton of Unicode Technical Standard #39 (section 4: NFD,
// default-ignorable characters removed, each character replaced by its
// prototype in Unicode's confusables data, NFD again) of the handle
// case-folded, without the general-purpose combining marks (accents, dots
// and lines above or below a letter: the blocks U+0300–U+036F,
// U+1AB0–U+1AFF, U+1DC0–U+1DFF, U+20D0–U+20FF and U+FE20–U+FE2F), left out
// both before and after the characters are mapped to their prototypes,
// with runs of white space read as one space and anything from the first
// '~' (or a character that looks like one: 〜, ˜, ～, ∼ …) on left out,
// and without the Arabic tatweel (U+0640, a stretch of the baseline).
// The Latin small capitals of one letter ("ʙᴏʙ") read as their letters, as
// capitals do (the confusables data maps only a few of them).
// Nonspacing and enclosing marks of a script of their own (Devanagari vowel signs,
// Arabic vowel marks, Japanese voicing marks) stay on a letter of their
// script, and are left out on a letter of another script or on no letter:
// an Arabic kasra under a Latin b reads as any small mark there. They are
// left out too on a letter whose prototype is of another script: an Arabic
// heh reads as a Latin o, and with a kasra as an o with a small mark.
//
// A handle also reads as another when it holds the other's key as whole
// words with more around it (Index): a remark ("bob (laptop)", "[admin]
// carol", "real carol") or punctuation ("bob.", "bob_"). Words are runs of
// letters, digits and marks, joined inside a name by '.', '-', '_', an
// apostrophe or a middle dot ("alice.w", "alice-bot" and "alice_2" are one
// word each, and do not read as "alice"); spaces, brackets, commas and
// other signs part words. A key without a letter or digit (an emoji alone)
// reads only as itself.
//
// Form tells a handle that reads like a name Parley shows in place of a
// handle (handle~SUFFIX, …SUFFIX, a peer ID).
//
// The confusables data is Unicode's confusables.txt, version 13.0.0
// (confusables.txt in this folder: its mapping lines, without their
// comments), read the first time a key is made, not at start.
package lookalike

import (
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Invisible reports characters that show nothing, or nothing a reader can
// tell: format characters (bidi controls, zero-width spaces and joiners,
// the soft hyphen, tags), the other default-ignorable code points of
// Unicode (Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the combining
// grapheme joiner…) and the blank Braille pattern U+2800. In a handle they
// serve to make it read like another (a zero-width joiner also joins the
// emoji of a sequence such as 👨‍💻, which handles have never held);
// variation selectors, which choose how an emoji shows, are not among them.
func Invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || r == '\u2800'
}

// ignorable reports what a skeleton leaves out: the invisible characters
// and variation selectors (Unicode's Default_Ignorable_Code_Point, and the
// blank Braille pattern).
func ignorable(r rune) bool {
	return Invisible(r) || unicode.Is(unicode.Variation_Selector, r)
}

//go:embed confusables.txt
var confusablesTxt string

var (
	protoOnce sync.Once
	protos    map[rune]string
	loaded    atomic.Bool
)

// prototypes is the confusables data: each character's prototype. It is
// read from confusablesTxt the first time it is needed.
func prototypes() map[rune]string {
	protoOnce.Do(func() {
		m, err := parseConfusables(confusablesTxt)
		if err != nil {
			panic(fmt.Sprintf("lookalike: the embedded confusables.txt: %v", err))
		}
		protos = m
		loaded.Store(true)
	})
	return protos
}

// Loaded reports whether the confusables data has been read: it is read
// the first time a key is made, so that a program that makes none does not
// pay for it.
func Loaded() bool { return loaded.Load() }

// parseConfusables reads the lines of confusables.txt: "SOURCE ; TARGET… ;
// TYPE", code points in hexadecimal, '#' starting a comment.
func parseConfusables(txt string) (map[rune]string, error) {
	m := make(map[rune]string, 6400)
	for n, line := range strings.Split(strings.TrimPrefix(txt, "\ufeff"), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, ";")
		if len(f) < 2 {
			return nil, fmt.Errorf("line %d: want SOURCE ; TARGET ; TYPE, got %q", n+1, line)
		}
		src, err := strconv.ParseUint(strings.TrimSpace(f[0]), 16, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n+1, err)
		}
		var b strings.Builder
		for _, t := range strings.Fields(f[1]) {
			r, err := strconv.ParseUint(t, 16, 32)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n+1, err)
			}
			b.WriteRune(rune(r))
		}
		m[rune(src)] = b.String()
	}
	return m, nil
}

// skeleton is s's confusable skeleton (UTS #39, section 4), without the
// general-purpose combining marks of s: they are left out before the
// characters are mapped to their prototypes, as some have a prototype that
// is a mark of a script of its own (U+0317, an acute accent below, reads
// as U+0650, the Arabic kasra), and after (key).
func skeleton(s string) string {
	p := prototypes()
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		switch t, ok := p[r]; {
		case ignorable(r) || diacritic(r):
		case ok:
			b.WriteString(t)
		default:
			b.WriteRune(r)
		}
	}
	return norm.NFD.String(b.String())
}

// Keys are what handle h reads as: handles that share a key read the
// same. There are two, often equal: the skeleton of h case-folded (so
// "ALICE" reads as "alice"), and the skeleton of h's skeleton case-folded
// (so "AIice", with a capital I, reads as "alice" too: folded first, its I
// would become an i).
func Keys(h string) []string {
	h = foreignMarks(norm.NFD.String(strings.Map(smallCapital, strings.Map(tatweel, norm.NFKC.String(strings.Map(tilde, h))))))
	a, b := key(skeleton(cases.Fold().String(h))), key(skeleton(cases.Fold().String(skeleton(h))))
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// tatweel leaves out the Arabic tatweel U+0640 (a kashida: a stretch of
// the baseline between letters, which reads as nothing, or as an
// underscore after a handle), also where NFKC makes one (U+FE71).
func tatweel(r rune) rune {
	if r == '\u0640' {
		return -1
	}
	return r
}

// smallCapitals are the Latin small capitals of one letter each, which
// read as that letter in capitals, so as the letter (folded): "ʙᴏʙ" reads
// as "BOB". The confusables data maps only a few of them (ᴏ, ᴄ, ᴠ, ᴡ, ᴢ,
// ꜱ…) to their letters. Modifier small capitals are made these by NFKC.
var smallCapitals = map[rune]rune{
	'\u1d00': 'a', '\u0299': 'b', '\u1d04': 'c', '\u1d05': 'd', '\u1d07': 'e', '\ua730': 'f', '\u0262': 'g',
	'\u029c': 'h', '\u026a': 'i', '\ua7ae': 'i', '\u1d0a': 'j', '\u1d0b': 'k', '\u029f': 'l', '\u1d0d': 'm',
	'\u0274': 'n', '\u1d0f': 'o', '\u1d18': 'p', '\ua7af': 'q', '\u0280': 'r', '\ua731': 's', '\u1d1b': 't',
	'\u1d1c': 'u', '\u1d20': 'v', '\u1d21': 'w', '\u028f': 'y', '\u1d22': 'z',
}

// smallCapital maps a Latin small capital to its letter (smallCapitals).
func smallCapital(r rune) rune {
	if l, ok := smallCapitals[r]; ok {
		return l
	}
	return r
}

// tilde maps the characters that look like a '~' to one.
func tilde(r rune) rune {
	switch r {
	case '\u02dc', '\u02f7', '\u1fc0', '\u2053', '\u223c', '\u223d', '\u223f', '\u301c', '\u3030', '\uff5e':
		return '~'
	}
	return r
}

// bareTilde reports whether h holds a combining tilde (above, overlaid,
// below) on no letter or digit: drawn alone after a space or a mark, it
// reads as a '~' ("alice \u0334PUdG"). On a letter it is the letter's
// (ñ typed in parts), not a tilde.
func bareTilde(h string) bool {
	prev := ' '
	for _, r := range h {
		switch r {
		case '\u0303', '\u0330', '\u0334', '\u034a':
			if !unicode.IsLetter(prev) && !unicode.IsDigit(prev) {
				return true
			}
		}
		prev = r
	}
	return false
}

// key is a skeleton as a key: without the general-purpose combining marks,
// runs of white space read as one space, and anything from the first '~'
// on left out.
func key(k string) string {
	k = strings.Map(func(r rune) rune {
		if diacritic(r) {
			return -1
		}
		return r
	}, k)
	if i := strings.IndexByte(k, '~'); i > 0 {
		k = k[:i]
	}
	return strings.Join(strings.Fields(k), " ")
}

// diacritic reports the general-purpose combining marks, which sit on the
// letters of any script: small enough to pass unseen, or to be taken for
// part of the letter.
func diacritic(r rune) bool {
	return r >= 0x0300 && r <= 0x036f || r >= 0x1ab0 && r <= 0x1aff || r >= 0x1dc0 && r <= 0x1dff ||
		r >= 0x20d0 && r <= 0x20ff || r >= 0xfe20 && r <= 0xfe2f
}

// foreignMarks is s (in NFD) without the nonspacing and enclosing marks
// (the Cyrillic number signs drawn around a letter) that do not
// belong with the letter they sit on: a mark of a script of its own (an
// Arabic kasra, a Devanagari vowel sign) on a letter of another script (a
// Latin b, or a Cyrillic о, whose prototype is a Latin o: markFits), or on
// no letter (after a space, a digit, a sign), reads as a small mark on it,
// as a general-purpose one does (Unicode Technical
// Standard #39 holds a mark to its letter's script the same way).
func foreignMarks(s string) string {
	base := rune(-1) // the letter the marks that follow sit on
	return strings.Map(func(r rune) rune {
		switch {
		case ignorable(r):
		case !unicode.Is(unicode.M, r):
			base = r
		case (unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r)) && !diacritic(r) && !markFits(r, base):
			return -1
		}
		return r
	}, s)
}

// markFits reports whether nonspacing mark m belongs with base: base is a
// letter (or digit) of one of m's scripts, and so is the first character
// of base's prototype, when it has one. A letter that reads as a letter
// of another script reads so with a mark of its own script too: a
// Cyrillic о with a titlo (U+0483) is a Latin o with a small mark, an
// Arabic heh with a kasra too.
func markFits(m, base rune) bool {
	if !fitsLetter(m, base) {
		return false
	}
	if t, ok := prototypes()[base]; ok {
		r, _ := utf8.DecodeRuneInString(t)
		return fitsLetter(m, r)
	}
	return true
}

// fitsLetter reports whether base is a letter (or digit) of one of
// nonspacing mark m's scripts.
func fitsLetter(m, base rune) bool {
	if base < 0 || !unicode.IsLetter(base) && !unicode.IsDigit(base) {
		return false
	}
	for _, sc := range markScripts(m) {
		if unicode.Is(sc, base) {
			return true
		}
	}
	return false
}

// markScripts is the scripts nonspacing mark m belongs with: its own, or,
// for a mark of the Inherited script outside the general-purpose blocks,
// those that use it (Unicode's Script_Extensions, in short). An Inherited
// mark not listed (Znamenny and musical notation, a Phaistos disc stroke)
// belongs with none, as the general-purpose ones.
func markScripts(m rune) []*unicode.RangeTable {
	for _, x := range inheritedMarks {
		if m >= x.lo && m <= x.hi {
			return x.scripts
		}
	}
	if sc := markScript()[m]; sc != nil && sc != unicode.Inherited {
		return []*unicode.RangeTable{sc}
	}
	return nil
}

// indic is the scripts that write Vedic accents (U+0951–U+0954,
// U+1CD0–U+1CF9).
var indic = []*unicode.RangeTable{unicode.Devanagari, unicode.Bengali, unicode.Grantha, unicode.Gujarati,
	unicode.Gurmukhi, unicode.Kannada, unicode.Malayalam, unicode.Oriya, unicode.Sharada, unicode.Tamil,
	unicode.Telugu, unicode.Tirhuta, unicode.Nandinagari}

// inheritedMarks is the nonspacing marks of the Inherited script outside
// the general-purpose blocks that belong with certain scripts.
var inheritedMarks = []struct {
	lo, hi  rune
	scripts []*unicode.RangeTable
}{
	{0x0485, 0x0486, []*unicode.RangeTable{unicode.Cyrillic, unicode.Latin}},
	{0x064b, 0x0655, []*unicode.RangeTable{unicode.Arabic, unicode.Syriac}},
	{0x0670, 0x0670, []*unicode.RangeTable{unicode.Arabic, unicode.Syriac}},
	{0x0951, 0x0954, indic},
	{0x1cd0, 0x1cf9, indic},
	{0x302a, 0x302d, []*unicode.RangeTable{unicode.Bopomofo, unicode.Han}},
	{0x3099, 0x309a, []*unicode.RangeTable{unicode.Hiragana, unicode.Katakana}},
	{0x102e0, 0x102e0, []*unicode.RangeTable{unicode.Arabic, unicode.Coptic}},
	{0x1133b, 0x1133b, []*unicode.RangeTable{unicode.Grantha, unicode.Tamil}},
}

// markScript is the script of each nonspacing mark, made the first time
// it is needed.
var markScript = sync.OnceValue(func() map[rune]*unicode.RangeTable {
	m := make(map[rune]*unicode.RangeTable, 2048)
	for _, sc := range unicode.Scripts {
		for _, r16 := range sc.R16 {
			for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
				if unicode.Is(unicode.Mn, r) {
					m[r] = sc
				}
			}
		}
		for _, r32 := range sc.R32 {
			for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
				if unicode.Is(unicode.Mn, r) {
					m[r] = sc
				}
			}
		}
	}
	return m
})

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

// Form reports whether handle h reads like a name Parley shows in place of
// a handle, so that a node could pass for another by taking it as its
// handle: handle~SUFFIX (h holds a '~' or a character that looks like
// one), …SUFFIX (how a node with no known handle shows: h starts with an
// ellipsis or dots), or a peer ID (h reads as 40 or more ASCII letters and
// digits in one word). keys are h's keys (Keys), when the caller has them;
// nil: they are made.
func Form(h string, keys []string) bool {
	if strings.ContainsFunc(h, func(r rune) bool { return tilde(r) == '~' }) || bareTilde(h) {
		return true
	}
	if keys == nil {
		keys = Keys(h)
	}
	for _, k := range keys {
		if strings.HasPrefix(k, "..") || strings.HasPrefix(k, "\u00b7\u00b7") {
			return true
		}
		if len(k) >= 40 && !strings.ContainsFunc(k, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			return true
		}
	}
	return false
}

// ReadsAs reports whether a handle whose key is k reads as one whose key
// is w: k is w, or holds w as whole words with more around it (see
// Index).
func ReadsAs(k, w string) bool {
	if k == w {
		return true
	}
	var x Index
	x.Add(w, 0)
	found := false
	x.Find(k, func(int) bool { found = true; return false })
	return found
}

// Index finds the keys a key reads as with more around them: those it
// holds as whole words, with what comes before and after them in their
// own key (a key "(bob)" is held by "[admin] (bob)", not by "bob"). A key
// without a letter or digit is not taken.
//
// A key taken is filed under its core (its words, from the first to the
// last), then under the signs before the core, then under those after it,
// so a key looked up costs what its own length allows, however many keys
// share a core: each run of its words is one look-up, and each of the
// signs around that run that some key of that core starts or ends with
// one more. Only the runs as long as a core that starts with their first
// word are looked up.
type Index struct {
	byCore map[string]*core
	// lens holds, for the first word of each core, the numbers of words
	// of the cores that start with it.
	lens map[string][]int
}

// core is the keys of an Index that have one core: by the signs before
// the core, then by the signs after it, the ids they were taken under.
type core struct {
	byBefore  map[string]map[string][]int
	maxBefore int // the longest signs before, in bytes
	maxAfter  int // the longest signs after, in bytes
}

// Add takes key k, under id. Its core may have any number of words: what
// the skeleton makes of some characters holds several (U+FDFA is four
// words once NFKC), and Find walks every word of the key it looks up.
func (x *Index) Add(k string, id int) {
	ws := words(k)
	if len(ws) == 0 {
		return
	}
	c := k[ws[0][0]:ws[len(ws)-1][1]]
	if !strings.ContainsFunc(c, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
		return
	}
	if x.byCore == nil {
		x.byCore, x.lens = make(map[string]*core), make(map[string][]int)
	}
	h := x.byCore[c]
	if h == nil {
		h = &core{byBefore: make(map[string]map[string][]int)}
		x.byCore[c] = h
	}
	before, after := k[:ws[0][0]], k[ws[len(ws)-1][1]:]
	byAfter := h.byBefore[before]
	if byAfter == nil {
		byAfter = make(map[string][]int)
		h.byBefore[before] = byAfter
	}
	byAfter[after] = append(byAfter[after], id)
	h.maxBefore, h.maxAfter = max(h.maxBefore, len(before)), max(h.maxAfter, len(after))
	if first := k[ws[0][0]:ws[0][1]]; !slices.Contains(x.lens[first], len(ws)) {
		x.lens[first] = append(x.lens[first], len(ws))
	}
}

// Find calls fn with the id of each key taken that k holds as whole words
// and is not k itself, until fn returns false. Every word of k is a start
// looked at: each costs one look-up for each length of a core that starts
// with that word, so a key costs what its own length allows.
func (x *Index) Find(k string, fn func(id int) bool) {
	if len(x.byCore) == 0 {
		return
	}
	ws := words(k)
	for a := range ws {
		// The signs between the word before and this one: a key's signs
		// before its core hold no word character, so they end this run.
		gapStart := 0
		if a > 0 {
			gapStart = ws[a-1][1]
		}
		for _, n := range x.lens[k[ws[a][0]:ws[a][1]]] {
			b := a + n - 1
			if b >= len(ws) {
				continue
			}
			c := x.byCore[k[ws[a][0]:ws[b][1]]]
			if c == nil {
				continue
			}
			gapEnd := len(k)
			if b+1 < len(ws) {
				gapEnd = ws[b+1][0]
			}
			gapBefore, gapAfter := k[gapStart:ws[a][0]], k[ws[b][1]:gapEnd]
			// Each tail of gapBefore and head of gapAfter, at most as long
			// as the signs of a key of this core, is looked up.
			for i := len(gapBefore); i >= 0 && len(gapBefore)-i <= c.maxBefore; i-- {
				if i < len(gapBefore) && !utf8.RuneStart(gapBefore[i]) {
					continue
				}
				byAfter := c.byBefore[gapBefore[i:]]
				if byAfter == nil {
					continue
				}
				for j := 0; j <= len(gapAfter) && j <= c.maxAfter; j++ {
					if j < len(gapAfter) && !utf8.RuneStart(gapAfter[j]) {
						continue
					}
					ids := byAfter[gapAfter[:j]]
					if len(ids) == 0 || gapStart+i == 0 && ws[b][1]+j == len(k) { // none, or k itself
						continue
					}
					for _, id := range ids {
						if !fn(id) {
							return
						}
					}
				}
			}
		}
	}
}

// words returns the byte spans of the words of k: runs of letters, digits
// and marks, joined across a run of joiners ('.', '-', '_', apostrophes,
// middle dots) that has a word character on both sides.
func words(k string) [][2]int {
	var out [][2]int
	for i := 0; i < len(k); {
		r, n := utf8.DecodeRuneInString(k[i:])
		if !wordRune(r) {
			i += n
			continue
		}
		start, end := i, i+n
		for j := end; j < len(k); {
			r, n := utf8.DecodeRuneInString(k[j:])
			if wordRune(r) {
				j += n
				end = j
				continue
			}
			m := j
			for m < len(k) {
				r, n := utf8.DecodeRuneInString(k[m:])
				if !joiner(r) {
					break
				}
				m += n
			}
			if m == j || m == len(k) {
				break
			}
			if r, _ := utf8.DecodeRuneInString(k[m:]); !wordRune(r) {
				break
			}
			j = m
		}
		out = append(out, [2]int{start, end})
		i = end
	}
	return out
}

// wordRune reports the characters of a word: letters, digits and marks.
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r)
}

// joiner reports characters that join words into one name: '.', an
// apostrophe, a middle dot (what the skeleton makes of ・, •, ‧ …), and
// connector and dash punctuation ('_', '-' …).
func joiner(r rune) bool {
	return r == '.' || r == '\'' || r == '\u00b7' || unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Pd, r)
}
