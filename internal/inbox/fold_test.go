package inbox

import "testing"

func TestFoldTellsLookAlikes(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"api", "api", true},
		{"api", "API", true},
		{"api", "\uff41\u200bp\u2060i\ufeff", true}, // full width, invisible characters
		{"api", " api\u202e ", true},                // bidi control, spaces
		{"a  p", "a p", true},
		{"api", "api\ufe0f", true}, // variation selector
		{"api", "apl", false},
		{"api", "\u0430pi", false}, // Cyrillic а: not folded
		{"api", "", false},
	} {
		if got := fold(c.a) == fold(c.b); got != c.same {
			t.Errorf("fold(%q) == fold(%q): %v, want %v (%q, %q)", c.a, c.b, got, c.same, fold(c.a), fold(c.b))
		}
	}
}
