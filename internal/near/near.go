// Package near finds the words a mistyped one was near: the flags of a
// command, the names of the node's rooms.
package near

import (
	"slices"
	"strings"
)

// Distance is the Levenshtein distance between a and b, by runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Words returns up to max of candidates within two edits of word (ignoring
// case), or that begin with it when it has three letters or more, nearest
// first, each once; word itself is not among them. Words over 64 bytes
// are not compared.
func Words(word string, candidates []string, max int) []string {
	type cand struct {
		w string
		d int
	}
	w := strings.ToLower(word)
	if len(w) > 64 {
		return nil
	}
	var cs []cand
	seen := map[string]bool{}
	for _, c := range candidates {
		if seen[c] || c == word || len(c) > 64 {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		d := Distance(w, lc)
		if d <= 2 || (len([]rune(w)) >= 3 && strings.HasPrefix(lc, w)) {
			cs = append(cs, cand{c, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	out := []string{}
	for _, c := range cs {
		if len(out) == max {
			break
		}
		out = append(out, c.w)
	}
	return out
}
