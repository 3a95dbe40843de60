package lookalike_test

import (
	"slices"
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
		// Small marks above or below a letter, and a tilde's look-alikes
		// before a suffix.
		{"carol", "caro\u1e37", "carol\u0323", "carol\u0345", "c\u00e1rol"},
		{"alice", "alice\u301cPUdG", "alice\u02dcPUdG", "alice\uff5ePUdG", "alice\u223cPUdG"},
	}
	for _, g := range same {
		for _, h := range g[1:] {
			if !lookalike.Same(h, g[0]) {
				t.Errorf("%q (%+q) reads like %q but keys %q and %q", h, h, g[0], lookalike.Keys(h), lookalike.Keys(g[0]))
			}
		}
	}
	apart := [][2]string{{"alice", "alicia"}, {"bob", "rob"}, {"here", "there"}, {"you", "yours"}, {"alice", "al ice"}, {"\u4e2d\u6587", "\u4e2d"},
		// A capital I reads as an l, but "ali" and "all" stay apart.
		{"ali", "all"},
		// Marks of a script of their own are part of its letters.
		{"\u0917\u0941\u0930\u0941", "\u0917\u0930"}}
	for _, p := range apart {
		if lookalike.Same(p[0], p[1]) {
			t.Errorf("%q and %q read differently but share a key: %q %q", p[0], p[1], lookalike.Keys(p[0]), lookalike.Keys(p[1]))
		}
	}
}

// A handle reads as another when it holds it as whole words with more
// around it: a remark before or after it, or punctuation; not when the
// other goes on with the same word (a letter, a digit, or a joiner such as
// '.', '-' or '_' and more of the word).
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
		{"bob (laptop)", "bob", true},
		{"b\u043eb (new laptop)", "bob", true},
		{"bob.", "bob", true},
		{"bob_", "bob", true},
		{"bob!!", "bob", true},
		{"[admin] carol", "carol", true},
		{"real carol", "carol", true},
		{"the carol (new)", "carol", true},
		{"\U0001f98a alice", "alice", true},
		{"[x] (bob)", "(bob)", true},
		{"bob smith (2)", "bob smith", true},
		{"youth", "you", false},
		{"hereford", "here", false},
		{"alice2", "alice", false},
		{"alice.w", "alice", false},
		{"alice-bot", "alice", false},
		{"alice_2", "alice", false},
		{"alice\u00b7w", "alice", false},
		{"alice's", "alice", false},
		{"mr.carol", "carol", false},
		{"bob", "(bob)", false},
		{"bob", "bob.", false},
		{"bob", "alice", false},
		{"", "alice", false},
		// A key without a letter or digit reads only as itself.
		{"\U0001f431", "\U0001f98a", false},
		{"\U0001f98a alice", "\U0001f98a", false},
		{"\U0001f431 alice", "\U0001f98a alice", false},
		{"!!", "!", false},
	} {
		if got := lookalike.ReadsAs(k(c.h), k(c.as)); got != c.want {
			t.Errorf("ReadsAs(%q, %q) = %v, want %v", c.h, c.as, got, c.want)
		}
	}
}

// Handles that read like a name Parley shows in place of a handle: a
// suffix after a '~' or a look-alike of one, … and a suffix, a peer ID.
func TestForm(t *testing.T) {
	for _, h := range []string{"alice~PUdG", "alice\u301cPUdG", "alice\u02dcPUdG", "alice\uff5ePUdG", "alice\u223fPUdG", "alice \u0334PUdG", "\u0303PUdG", "\u2026gmZmkHgK", "...gmZmkHgK",
		"12D3KooWDA8czuYiLVo4WKvreGCzijAVWGrJvRNKbLzfgmZmkHgK", "QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N",
		"12D3K\u043e\u043eWDA8czuYiLVo4WKvreGCzijAVWGrJvRNKbLzfgmZmkHgK"} {
		if !lookalike.Form(h, nil) || !lookalike.Form(h, lookalike.Keys(h)) {
			t.Errorf("Form(%q) = false", h)
		}
	}
	for _, h := range []string{"alice", "bob smith", "o'brien (ops)", "alice.w", "a very long handle with many words in it, sixty", "\u674e\u96f7", "nun\u0303o"} {
		if lookalike.Form(h, nil) {
			t.Errorf("Form(%q) = true", h)
		}
	}
}

// An Index finds each key taken that a key holds as whole words, by its
// id, and not the key itself.
func TestIndex(t *testing.T) {
	var x lookalike.Index
	for i, h := range []string{"bob", "carol", "bob smith", "(dave)", "\U0001f98a"} {
		x.Add(lookalike.Keys(h)[0], i)
	}
	for h, want := range map[string][]int{
		"bob (laptop)":       {0},
		"bob smith (laptop)": {0, 2},
		"[x] (dave)":         {3},
		"dave":               nil,
		"bob":                nil,
		"carol & bob":        {0, 1},
		"\U0001f98a bob":     {0},
		"bobby":              nil,
	} {
		var got []int
		x.Find(lookalike.Keys(h)[0], func(id int) bool { got = append(got, id); return true })
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("Find(%q) = %v, want %v", h, got, want)
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
