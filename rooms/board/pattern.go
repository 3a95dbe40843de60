package board

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPattern is the longest pattern, in bytes.
const MaxPattern = 512

// CheckPattern checks one claim path: relative to the repository's root,
// "/" between segments, no ".", ".." or empty segment, no control
// characters, and of the glob characters only "*", "**" and "?" ("[", "]",
// "{", "}" and "\" are refused).
func CheckPattern(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty path", ErrBadInput)
	}
	if len(p) > MaxPattern || !utf8.ValidString(p) {
		return fmt.Errorf("%w: path %.60q: at most %d bytes of text", ErrBadInput, p, MaxPattern)
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("%w: path %q is absolute; paths are relative to the repository's root", ErrBadInput, p)
	}
	if i := strings.IndexFunc(p, unicode.IsControl); i >= 0 {
		return fmt.Errorf("%w: path %q has a control character", ErrBadInput, p)
	}
	if i := strings.IndexAny(p, `[]{}\`); i >= 0 {
		return fmt.Errorf("%w: path %q: %q is not supported (use *, ** and ?)", ErrBadInput, p, p[i])
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: path %q has an empty segment", ErrBadInput, p)
		case ".", "..":
			return fmt.Errorf("%w: path %q has a %q segment", ErrBadInput, p, seg)
		}
	}
	return nil
}

// token kinds of a pattern.
const (
	tokLit  = iota // one rune
	tokOne         // ?: one rune but /
	tokStar        // *: any run without /
	tokAny         // **: any run
)

type token struct {
	kind int
	r    rune
}

func tokens(p string) []token {
	var ts []token
	for i := 0; i < len(p); {
		switch {
		case strings.HasPrefix(p[i:], "**"):
			ts = append(ts, token{kind: tokAny})
			i += 2
			for i < len(p) && p[i] == '*' {
				i++
			}
		case p[i] == '*':
			ts = append(ts, token{kind: tokStar})
			i++
		case p[i] == '?':
			ts = append(ts, token{kind: tokOne})
			i++
		default:
			r, n := utf8.DecodeRuneInString(p[i:])
			ts = append(ts, token{kind: tokLit, r: r})
			i += n
		}
	}
	return ts
}

// literalPrefix is the part of p before its first glob character.
func literalPrefix(p string) string {
	if i := strings.IndexAny(p, "*?"); i >= 0 {
		return p[:i]
	}
	return p
}

// Overlap reports whether some path matches both patterns.
func Overlap(a, b string) bool { return overlap(a, literalPrefix(a), b, literalPrefix(b)) }

// overlap is Overlap with the literal prefixes known.
func overlap(a, pa, b, pb string) bool {
	if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) {
		return false
	}
	if len(pa) == len(a) && len(pb) == len(b) {
		return a == b
	}
	return intersect(tokens(a), tokens(b))
}

// step is where a pattern at token i goes on rune c (none: -1; c == 0 is
// any rune that is neither "/" nor a literal of either pattern).
func step(ts []token, i int, c rune) int {
	if i >= len(ts) {
		return -1
	}
	switch t := ts[i]; t.kind {
	case tokLit:
		if t.r == c {
			return i + 1
		}
	case tokOne:
		if c != '/' {
			return i + 1
		}
	case tokStar:
		if c != '/' {
			return i
		}
	case tokAny:
		return i
	}
	return -1
}

// intersect searches the product of the two patterns' automata for a
// state where both have matched everything.
func intersect(a, b []token) bool {
	alpha := []rune{0, '/'}
	seen := map[rune]bool{0: true, '/': true}
	for _, ts := range [][]token{a, b} {
		for _, t := range ts {
			if t.kind == tokLit && !seen[t.r] {
				seen[t.r] = true
				alpha = append(alpha, t.r)
			}
		}
	}
	type state struct{ i, j int }
	visited := map[state]bool{}
	stack := []state{{0, 0}}
	push := func(s state) {
		if !visited[s] {
			visited[s] = true
			stack = append(stack, s)
		}
	}
	visited[state{0, 0}] = true
	star := func(ts []token, i int) bool { return i < len(ts) && (ts[i].kind == tokStar || ts[i].kind == tokAny) }
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s.i == len(a) && s.j == len(b) {
			return true
		}
		if star(a, s.i) {
			push(state{s.i + 1, s.j})
		}
		if star(b, s.j) {
			push(state{s.i, s.j + 1})
		}
		for _, c := range alpha {
			ni, nj := step(a, s.i, c), step(b, s.j, c)
			if ni >= 0 && nj >= 0 {
				push(state{ni, nj})
			}
		}
	}
	return false
}

// Match reports whether the plain path name matches pattern p.
func Match(p, name string) bool {
	if strings.ContainsAny(name, "*?") {
		return false
	}
	return Overlap(p, name)
}
