// Package termtext makes texts from other nodes safe to print on a
// terminal. Texts, names and purposes come from other nodes, and a byte such
// as ESC (a CSI or OSC sequence) would otherwise drive the reader's
// terminal — move the cursor, rewrite earlier lines, set the window title,
// plant a hyperlink — and a bidi override would reorder what a line shows.
// Structured output (JSON) needs none of this: JSON escapes control
// characters itself.
//
// Every character that could drive a terminal or hide what a text says is
// shown escaped: C0 controls, DEL and C1 controls as \xNN, bidi marks and
// overrides, the line and paragraph separators and the characters that
// show nothing (lookalike.Invisible: zero-width spaces, Hangul fillers,
// tag characters, the blank Braille pattern…, so that a name "bob\u3164"
// does not read as "bob" and a text hides no words) as \uNNNN, and bytes
// that are not UTF-8 as \xNN. Texts of several lines keep the zero-width
// joiner and non-joiner, which join the emoji of a sequence (👨‍💻) and
// shape the letters of some scripts; a line (names, handles, a note)
// shows them escaped.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/lookalike"
)

// Line returns s on one line: newlines and tabs are escaped too.
func Line(s string) string { return escape(s, mode{}) }

// Lines is for a text of several lines shown under a heading: newlines stay,
// each line after the first indented by two spaces (so it cannot pass for an
// entry of its own), and so do tabs.
func Lines(s string) string { return escape(s, mode{keepLines: true, indent: true, joiners: true}) }

// Text keeps newlines and tabs as they are and escapes everything else that
// Line escapes: for a text an agent's client shows in a block of its own.
func Text(s string) string { return escape(s, mode{keepLines: true, joiners: true}) }

type mode struct {
	keepLines bool // newline and tab pass
	indent    bool // each newline is followed by two spaces
	joiners   bool // the zero-width joiner and non-joiner pass
}

func escape(s string, m mode) string {
	if plain(s, m) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case m.keepLines && r == '\n':
			if m.indent {
				b.WriteString("\n  ")
			} else {
				b.WriteByte('\n')
			}
		case m.keepLines && r == '\t':
			b.WriteByte('\t')
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeAbove(r, m) && !(r == zwj && JoinsEmoji(s, i)):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

const zwj = 0x200d

// JoinsEmoji reports whether s holds, at byte i, a zero-width joiner
// between two emoji: after an emoji (with its variation selector or skin
// tone, if any) and before one. Such a joiner makes one emoji of them (a
// family, a profession) and hides nothing; escaped, it broke the emoji
// apart. Next to a letter it is escaped as ever.
func JoinsEmoji(s string, i int) bool {
	if r, _ := utf8.DecodeRuneInString(s[i:]); r != zwj {
		return false
	}
	next, _ := utf8.DecodeRuneInString(s[i+len(string(rune(zwj))):])
	prev := utf8.RuneError
	for j := i; j > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		if r != 0xfe0f && (r < 0x1f3fb || r > 0x1f3ff) {
			prev = r
			break
		}
		j -= n
	}
	return emoji(prev) && emoji(next)
}

// emoji reports whether r is in the blocks of the emoji a joiner joins
// (pictographs, symbols, dingbats): never a letter, among which a joiner
// could hide a look-alike.
func emoji(r rune) bool { return r >= 0x1f000 && r <= 0x1faff || r >= 0x2600 && r <= 0x27bf }

// plain reports whether s comes out of escape unchanged (the common case:
// a line of printable ASCII is decided in one pass over its bytes).
func plain(s string, m mode) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			ascii = false
		case c == '\n':
			if !m.keepLines || m.indent {
				return false
			}
		case c == '\t':
			if !m.keepLines {
				return false
			}
		case c < 0x20 || c == 0x7f:
			return false
		}
	}
	if ascii {
		return true
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return false
			}
		}
		if unsafeAbove(r, m) {
			return false
		}
	}
	return true
}

// unsafeAbove reports the characters above ASCII that are escaped in mode
// m: C1 controls (U+009B is CSI on terminals that take 8-bit controls),
// the line and paragraph separators, and the characters that show nothing
// (lookalike.Invisible), among them the bidi marks and overrides (they
// reorder what is shown); the zero-width joiner and non-joiner pass when
// m.joiners.
func unsafeAbove(r rune, m mode) bool {
	switch {
	case r < 0x80:
		return false
	case r < 0xa0:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	case m.joiners && (r == 0x200c || r == 0x200d):
		return false
	}
	return lookalike.Invisible(r)
}
