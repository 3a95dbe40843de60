package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, line, lines, text string }{
		{"plain text, ünïcödé 🎉", "plain text, ünïcödé 🎉", "plain text, ünïcödé 🎉", "plain text, ünïcödé 🎉"},
		{"a\x1b[2Jb", `a\x1b[2Jb`, `a\x1b[2Jb`, `a\x1b[2Jb`},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`, `\x1b]0;title\x07`, `\x1b]0;title\x07`},
		{"x\u009b31m", `x\u009b31m`, `x\u009b31m`, `x\u009b31m`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`, `evil\u202etxt.exe`, `evil\u202etxt.exe`},
		{"iso\u2066late\u2069 \u061c\u200e\u200f", `iso\u2066late\u2069 \u061c\u200e\u200f`, `iso\u2066late\u2069 \u061c\u200e\u200f`, `iso\u2066late\u2069 \u061c\u200e\u200f`},
		{"sep\u2028ara\u2029tor", `sep\u2028ara\u2029tor`, `sep\u2028ara\u2029tor`, `sep\u2028ara\u2029tor`},
		{"two\nlines\tand tab", `two\x0alines\x09and tab`, "two\n  lines\tand tab", "two\nlines\tand tab"},
		{"cr\rback", `cr\x0dback`, `cr\x0dback`, `cr\x0dback`},
		{"bad \xff byte", `bad \xff byte`, `bad \xff byte`, `bad \xff byte`},
		{"del\x7f", `del\x7f`, `del\x7f`, `del\x7f`},
		// Characters that show nothing: a name with a Hangul filler does
		// not read as the name without it, and a text hides no tags.
		{"bob\u3164", `bob\u3164`, `bob\u3164`, `bob\u3164`},
		{"zero\u200bwidth \u2800 \u115f\u00ad", `zero\u200bwidth \u2800 \u115f\u00ad`, `zero\u200bwidth \u2800 \u115f\u00ad`, `zero\u200bwidth \u2800 \u115f\u00ad`},
		{"hi\U000e0041\U000e0042", `hi\ue0041\ue0042`, `hi\ue0041\ue0042`, `hi\ue0041\ue0042`},
		// Texts keep the joiners of an emoji sequence; a line does not.
		{"\U0001f468\u200d\U0001f4bb \u2764\ufe0f", "\U0001f468\u200d\U0001f4bb \u2764\ufe0f", "\U0001f468\u200d\U0001f4bb \u2764\ufe0f", "\U0001f468\u200d\U0001f4bb \u2764\ufe0f"},
		{"", "", "", ""},
	} {
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := Lines(c.in); got != c.lines {
			t.Errorf("Lines(%q) = %q, want %q", c.in, got, c.lines)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// FuzzEscape: whatever comes in, what goes out is valid UTF-8 with no
// character that drives a terminal or reorders a line; a text with nothing
// to escape passes unchanged; Line never leaves a newline.
func FuzzEscape(f *testing.F) {
	f.Add("hello \x1b]8;;http://x\x07link\x1b]8;;\x07")
	f.Add("\u009b\u202e\xff\n\t")
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Line(s), Lines(s), Text(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 out of %q: %q", s, out)
			}
			for _, r := range out {
				if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || unsafeAbove(r, mode{}) && r != 0x200c && r != 0x200d {
					t.Fatalf("%q left in the output of %q: %q", r, s, out)
				}
			}
		}
		if strings.ContainsAny(Line(s), "\n\t") {
			t.Fatalf("Line(%q) keeps a newline or tab", s)
		}
		if Text(s) == s != isClean(s) {
			t.Fatalf("Text(%q) = %q: changed a clean text or kept a dirty one", s, Text(s))
		}
	})
}

// isClean is the slow statement of what Text leaves as it is.
func isClean(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '\n' || r == '\t' {
			continue
		}
		if r < 0x20 || r == 0x7f || unsafeAbove(r, mode{joiners: true}) {
			return false
		}
	}
	return true
}

// TestEmojiJoinedStayWhole: a zero-width joiner between two emoji (a
// family, a woman with a skin tone who is a pilot) passes in every mode,
// one-line fields too, where it was escaped and broke the emoji apart; one
// next to a letter, or at either end, is escaped as before.
func TestEmojiJoinedStayWhole(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧"},
		{"👩🏽\u200d✈️ flies", "👩🏽\u200d✈️ flies"},
		{"❤️\u200d🔥", "❤️\u200d🔥"},
		{"a\u200db", `a\u200db`},
		{"👨\u200db", `👨\u200db`},
		{"a\u200d👨", `a\u200d👨`},
		{"\u200d👨", `\u200d👨`},
		{"👨\u200d", `👨\u200d`},
		{"👨\u200d\u200d👩", `👨\u200d\u200d👩`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
