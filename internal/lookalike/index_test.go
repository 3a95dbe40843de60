package lookalike

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// scanFind is what Index.Find finds, found the slow way: each key taken is
// looked for at each run of k's words.
func scanFind(taken []string, k string) []int {
	var out []int
	ws := words(k)
	for id, h := range taken {
		hw := words(h)
		if h == k || len(hw) == 0 ||
			!strings.ContainsFunc(h[hw[0][0]:hw[len(hw)-1][1]], func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		core, before, after := h[hw[0][0]:hw[len(hw)-1][1]], h[:hw[0][0]], h[hw[len(hw)-1][1]:]
		for a := range ws {
			for b := a; b < len(ws); b++ {
				if k[ws[a][0]:ws[b][1]] == core && strings.HasSuffix(k[:ws[a][0]], before) && strings.HasPrefix(k[ws[b][1]:], after) {
					out = append(out, id)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestIndexFindsWhatAScanFinds: an Index files the keys it takes by their
// core, then by the signs before and after it, so that a key looked up
// costs what its length allows however many keys share a core (before,
// it scanned every key of a core for each run of words looked up: room
// members whose handles share a word with remarks that differ made the
// names table's rebuild grow with the square of the nodes). It finds what
// looking for each key at each run of words finds.
func TestIndexFindsWhatAScanFinds(t *testing.T) {
	parts := []string{"x", "bob", "a.b", "\u00e9", " ", "(", ")", "!", ".", "-", " (", ") ", "\u300c", "\u300d"}
	rnd := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		var b strings.Builder
		for range 1 + rnd.IntN(7) {
			b.WriteString(parts[rnd.IntN(len(parts))])
		}
		return b.String()
	}
	var taken []string
	var x Index
	for i := range 300 {
		k := gen()
		taken = append(taken, k)
		x.Add(k, i)
	}
	found := 0
	for range 3000 {
		k := gen()
		var got []int
		x.Find(k, func(id int) bool { got = append(got, id); return true })
		slices.Sort(got)
		found += len(got)
		if want := scanFind(taken, k); !slices.Equal(got, want) {
			t.Fatalf("Find(%q) = %v, want %v", k, got, want)
		}
	}
	if found < 1000 {
		t.Errorf("%d keys found in all: the keys drawn share too little", found)
	}
}
