package near

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"lisen", "listen", 1}, {"", "abc", 3}, {"abc", "", 3}, {"design", "desgin", 2}, {"same", "same", 0}, {"café", "cafe", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

func TestWords(t *testing.T) {
	cands := []string{"listen", "loopback", "home", "Design", "design-review", "json"}
	for _, tc := range []struct {
		word string
		want []string
	}{
		{"lisen", []string{"listen"}},
		{"desgin", []string{"Design"}},
		{"desi", []string{"Design", "design-review"}},
		{"zzzzzz", []string{}},
		{"listen", []string{}},
	} {
		if got := Words(tc.word, cands, 3); !slices.Equal(got, tc.want) {
			t.Errorf("Words(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := Words("a", []string{"b", "c", "d", "e"}, 2); len(got) != 2 {
		t.Errorf("Words kept %d, want at most 2", len(got))
	}
}
