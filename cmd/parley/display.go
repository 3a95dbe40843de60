package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Everything the CLI prints for a person to read goes through safe or
// safeText: texts, names and purposes come from other nodes, and a byte
// such as ESC (a CSI or OSC sequence) would otherwise drive the reader's
// terminal — move the cursor, rewrite earlier lines, set the window title,
// plant a hyperlink. --json output needs none of this: JSON escapes control
// characters itself.

// safe returns s on one line with every character that could drive a
// terminal, or hide what the line says, shown escaped: C0 controls
// (including newline and tab), DEL, C1 controls, bidi overrides and line
// separators as \xNN or \uNNNN, and bytes that are not UTF-8 as \xNN.
func safe(s string) string { return escape(s, false) }

// safeLines is safe for a text of several lines: newlines stay (each line
// after the first indented by two spaces, so it cannot pass for an event
// of its own), and so do tabs.
func safeLines(s string) string { return escape(s, true) }

func escape(s string, multiline bool) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case multiline && r == '\n':
			b.WriteString("\n  ")
		case multiline && r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// isPlain reports whether s has nothing to escape (the common case).
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			return isPlainSlow(s)
		}
	}
	return true
}

func isPlainSlow(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return false
			}
		}
		if r < 0x20 || r == 0x7f || unsafeRune(r) {
			return false
		}
	}
	return true
}

// unsafeRune reports the characters above ASCII that are escaped: C1
// controls (U+009B is CSI on terminals that take 8-bit controls), bidi
// marks and overrides (they reorder what is shown), and the line and
// paragraph separators.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}
