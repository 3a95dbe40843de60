package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSafe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, one, lines string }{
		{"plain text, ünïcödé 🎉", "plain text, ünïcödé 🎉", "plain text, ünïcödé 🎉"},
		{"a\x1b[2Jb", `a\x1b[2Jb`, `a\x1b[2Jb`},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`, `\x1b]0;title\x07`},
		{"x\u009b31m", `x\u009b31m`, `x\u009b31m`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`, `evil\u202etxt.exe`},
		{"two\nlines\tand tab", `two\x0alines\x09and tab`, "two\n  lines\tand tab"},
		{"cr\rback", `cr\x0dback`, `cr\x0dback`},
		{"bad \xff byte", `bad \xff byte`, `bad \xff byte`},
		{"del\x7f", `del\x7f`, `del\x7f`},
	} {
		if got := safe(c.in); got != c.one {
			t.Errorf("safe(%q) = %q, want %q", c.in, got, c.one)
		}
		if got := safeLines(c.in); got != c.lines {
			t.Errorf("safeLines(%q) = %q, want %q", c.in, got, c.lines)
		}
	}
}

// FuzzSafe: whatever comes in, what goes out is valid UTF-8 with no byte
// that drives a terminal, and plain text passes unchanged.
func FuzzSafe(f *testing.F) {
	f.Add("hello \x1b]8;;http://x\x07link\x1b]8;;\x07")
	f.Add("\u009b\u202e\xff\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{safe(s), safeLines(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 out of %q: %q", s, out)
			}
			for _, r := range out {
				if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || unsafeRune(r) {
					t.Fatalf("%q left in the output of %q: %q", r, s, out)
				}
			}
		}
		if strings.ContainsRune(safe(s), '\n') {
			t.Fatalf("safe(%q) has a newline", s)
		}
	})
}
