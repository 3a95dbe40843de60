package lookalike_test

import (
	"testing"

	"github.com/parley-mesh/parley/internal/lookalike"
)

// Handles that read the same have one key: other scripts' look-alike
// letters, digits for letters, case, width, invisible characters, runs of
// spaces, and a "~SUFFIX" a handle brings of its own; handles that read
// differently keep apart.
func TestKeys(t *testing.T) {
	same := [][]string{
		{"alice", "\u0430lice", "ALICE", "AIice", "al\u0456ce", "\uff41lice", "alice\u3164", "\u115falice", "ali\u200bce", "alic\u0435", "alice~ab12", "a\u034flice"},
		{"here", "h\u0435re", "HERE", "\u04bbere", "h\u0435r\u0435", "here\ufe0f"},
		{"bob", "b0b", "BOB", "b\u043eb", "b\u03bfb"},
		{"bob smith", "bob  smith", "bob\u2003smith", "bob\u3000smith"},
		{"mary", "rnary"},
	}
	for _, g := range same {
		for _, h := range g[1:] {
			if !lookalike.Same(h, g[0]) {
				t.Errorf("%q (%+q) reads like %q but keys %q and %q", h, h, g[0], lookalike.Keys(h), lookalike.Keys(g[0]))
			}
		}
	}
	apart := [][2]string{{"alice", "alicia"}, {"bob", "rob"}, {"here", "there"}, {"you", "yours"}, {"alice", "al ice"}, {"\u4e2d\u6587", "\u4e2d"}}
	for _, p := range apart {
		if lookalike.Same(p[0], p[1]) {
			t.Errorf("%q and %q read differently but share a key: %q %q", p[0], p[1], lookalike.Keys(p[0]), lookalike.Keys(p[1]))
		}
	}
}

// A handle reads as another when it is that one and then a remark, not
// when it goes on with the same word.
func TestReadsAs(t *testing.T) {
	k := func(h string) string { return lookalike.Keys(h)[0] }
	for _, c := range []struct {
		h, as string
		want  bool
	}{
		{"here. (you, this node)", "here", true},
		{"h\u0435re (you)", "here", true},
		{"(you)", "you", true},
		{"you", "you", true},
		{"alice", "alice", true},
		{"alice [admin]", "alice", true},
		{"youth", "you", false},
		{"hereford", "here", false},
		{"alice2", "alice", false},
		{"bob", "alice", false},
		{"", "alice", false},
	} {
		if got := lookalike.ReadsAs(k(c.h), k(c.as)); got != c.want {
			t.Errorf("ReadsAs(%q, %q) = %v, want %v", c.h, c.as, got, c.want)
		}
	}
}

func TestInvisible(t *testing.T) {
	for _, r := range []rune{'\u3164', '\u115f', '\u1160', '\uffa0', '\u200b', '\u200d', '\u202e', '\u2066', '\u00ad', '\u034f', '\u2800', '\ufeff', '\U000e0041'} {
		if !lookalike.Invisible(r) {
			t.Errorf("%U is not taken for invisible", r)
		}
	}
	for _, r := range []rune{'a', ' ', '\u0430', '\ufe0f', '\u00e9', '\u4e2d', '-', '~'} {
		if lookalike.Invisible(r) {
			t.Errorf("%U is taken for invisible", r)
		}
	}
}
