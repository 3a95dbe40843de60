package board

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxPattern is the longest pattern, in bytes.
const MaxPattern = 512

// MaxStars is the most "*" and "**" of one pattern, and MaxClaimStars of
// all the paths of one claim or release. Whether two patterns overlap is
// decided on the product of their automata, whose states the patterns'
// stars multiply: two 500-byte patterns of 250 stars each took 0.28 s,
// and a claim of 64 such paths against another a quarter of an hour, on
// every member node.
const (
	MaxStars      = 8
	MaxClaimStars = 16
)

// Stars counts the "*" and "**" of p: each run of "*" is one (tokens reads
// a run of two or more as one "**").
func Stars(p string) int {
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '*' && (i == 0 || p[i-1] != '*') {
			n++
		}
	}
	return n
}

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
	if n := Stars(p); n > MaxStars {
		return fmt.Errorf("%w: path %.60q has %d * or **, at most %d", ErrBadInput, p, n, MaxStars)
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
	tokLit   = iota // one rune
	tokOne          // ?: one rune but /
	tokStar         // *: any run without /
	tokAny          // **: any run
	tokSegs         // **/ as a whole segment: zero or more whole segments, each with its /
	tokSegIn        // follows tokSegs: inside one of its segments
)

type token struct {
	kind int
	r    rune
}

// tokens reads p. A "**" that is a whole segment with a "/" after it
// ("**/x", "a/**/x") is zero or more whole segments, so "**/*.go" matches
// main.go and "a/**/x" a/x, as in git's globs, .gitignore and bash's
// globstar; any other "**" ("a/**", "a**b") is any run, "/" included.
func tokens(p string) []token {
	var ts []token
	for i := 0; i < len(p); {
		switch {
		case strings.HasPrefix(p[i:], "**"):
			j := i + 2
			for j < len(p) && p[j] == '*' {
				j++
			}
			if (i == 0 || p[i-1] == '/') && j < len(p) && p[j] == '/' {
				ts = append(ts, token{kind: tokSegs}, token{kind: tokSegIn})
				j++
			} else {
				ts = append(ts, token{kind: tokAny})
			}
			i = j
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
	return p[:globAt(p)]
}

// globAt is the index of p's first glob character ("*" or "?"), len(p)
// if it has none. (Two IndexByte scans, not IndexAny: the fold asks this
// of paths up to MaxPattern bytes for every claim it compares.)
func globAt(p string) int {
	i := strings.IndexByte(p, '*')
	if i < 0 {
		i = len(p)
	}
	if j := strings.IndexByte(p[:i], '?'); j >= 0 {
		return j
	}
	return i
}

// folder is, for a path with no glob, the folder it also names: p
// without a trailing "/" (ok false for a glob, and for "" and "/").
func folder(p string) (dir string, ok bool) {
	if globAt(p) < len(p) {
		return "", false
	}
	dir = strings.TrimSuffix(p, "/")
	return dir, dir != ""
}

// covers reports whether p, a path with no glob, covers a pattern whose
// literal prefix is lp because it names something inside p's folder.
func covers(p, lp string) bool {
	dir, ok := folder(p)
	return ok && len(lp) > len(dir) && lp[len(dir)] == '/' && strings.HasPrefix(lp, dir)
}

// Overlap reports whether two patterns overlap: some path matches both,
// or one is a path with no glob and the other names something inside the
// folder of that name (its literal prefix begins with the path and a
// "/"). Git holds a file or a folder at a path, never both, so a claim on
// a path that is no file yet ("pkg/new", a package about to be made)
// covers the files under it: "pkg/new/a.go", "pkg/new/**",
// "pkg/new/*.go". A glob that reaches into it only through a star
// ("**/*.go", "pkg/*/a.go") does not: "README.md" or "pkg/util.go" is
// far more often a file than a folder, and a claim on "**/*_test.go"
// would otherwise overlap a claim on every path with no glob.
//
// Paths are compared in one form: case-folded, in Unicode's NFC (key), so
// "README.md" and "readme.md", and "café.go" with é as one character or
// as e and an accent, overlap. On a file system that folds case (macOS's
// and Windows' defaults) they are one file; on one that does not, two
// claims differing only in case are refused as one, which for an advisory
// claim is the safer error. What is stored and shown is as written.
func Overlap(a, b string) bool {
	a, b = key(a), key(b)
	return overlap(a, literalPrefix(a), b, literalPrefix(b))
}

// key is the form paths are compared in: case-folded, one character for
// one (each letter as the small one of the letters Unicode folds together:
// Σ, σ and ς are σ, and S, s and ſ are s, as file systems that fold case
// compare names, where lower case alone keeps ς and ſ apart), of the path
// in NFC. A character stays one character, so a "?" matches in key form
// what it matches as written (in NFC).
func key(p string) string {
	upper := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= utf8.RuneSelf {
			return norm.NFC.String(strings.Map(foldRune, norm.NFC.String(p)))
		}
		upper = upper || 'A' <= c && c <= 'Z'
	}
	if upper {
		return strings.ToLower(p) // ASCII: foldRune is ToLower there
	}
	return p
}

// foldRune is the small form of the first of the characters Unicode folds
// r together with (its orbit under simple case folding): the same for all
// of them.
func foldRune(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return unicode.ToLower(m)
}

// overlap is Overlap with the paths in their key form and their literal
// prefixes known. The paths that
// match a pattern all begin with its literal prefix, and a folder covers
// only a pattern whose literal prefix begins with it, so two patterns
// whose literal prefixes are apart (neither begins the other) are apart:
// heldIndex relies on it.
func overlap(a, pa, b, pb string) bool {
	// A path with no glob and a trailing "/" (a read's, never a claim's)
	// is the folder: the path without it.
	if dir, ok := folder(a); ok {
		a, pa = dir, dir
	}
	if dir, ok := folder(b); ok {
		b, pb = dir, dir
	}
	if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) {
		return false
	}
	if covers(a, pb) || covers(b, pa) {
		return true
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
	case tokSegs: // a segment is not empty
		if c != '/' {
			return i + 1
		}
	case tokSegIn: // the segment goes on, or ends with its "/"
		if c != '/' {
			return i
		}
		return i - 1
	}
	return -1
}

// skip is where a pattern at token i goes on no rune (none: -1): past a
// "*" or "**" that matches nothing, past "**/" that matches no segment.
func skip(ts []token, i int) int {
	if i >= len(ts) {
		return -1
	}
	switch ts[i].kind {
	case tokStar, tokAny:
		return i + 1
	case tokSegs:
		return i + 2
	}
	return -1
}

// intersect searches the product of the two patterns' automata for a
// state where both have matched everything. At a state only the literals
// the two tokens there name, "/" and any other rune (0) lead to different
// places, so those are the runes tried.
func intersect(a, b []token) bool {
	type state struct{ i, j int }
	// A table of every state, or for long patterns (a path asked about,
	// not claimed, may be longer than MaxPattern) a map of those reached.
	w := len(b) + 1
	var dense []bool
	var sparse map[int]bool
	if n := (len(a) + 1) * w; n <= 1<<18 {
		dense = make([]bool, n)
	} else {
		sparse = map[int]bool{}
	}
	seen := func(k int) bool {
		if dense != nil {
			v := dense[k]
			dense[k] = true
			return v
		}
		v := sparse[k]
		sparse[k] = true
		return v
	}
	stack := []state{{0, 0}}
	push := func(s state) {
		if !seen(s.i*w + s.j) {
			stack = append(stack, s)
		}
	}
	seen(0)
	lit := func(ts []token, i int) (rune, bool) {
		if i < len(ts) && ts[i].kind == tokLit && ts[i].r != '/' && ts[i].r != 0 {
			return ts[i].r, true
		}
		return 0, false
	}
	alpha := make([]rune, 0, 4)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s.i == len(a) && s.j == len(b) {
			return true
		}
		if i := skip(a, s.i); i >= 0 {
			push(state{i, s.j})
		}
		if j := skip(b, s.j); j >= 0 {
			push(state{s.i, j})
		}
		alpha = append(alpha[:0], 0, '/')
		if r, ok := lit(a, s.i); ok {
			alpha = append(alpha, r)
		}
		if r, ok := lit(b, s.j); ok {
			alpha = append(alpha, r)
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

// Match reports whether the plain path name (a file, not a folder)
// matches pattern p, or is inside p's folder when p has no glob (see
// Overlap): "pkg/new" matches pkg/new/a.go, "pkg/new/a.go" does not
// match pkg/new. They are compared as Overlap compares them. The name is
// taken as it is, of any length: a "*" or "?" in it is that character
// (git takes a file named "src/?.go"), not a glob; before, such a name
// matched nothing.
func Match(p, name string) bool {
	p, name = key(p), key(name)
	if dir, ok := folder(p); ok {
		return name == dir || covers(dir, name)
	}
	if !strings.HasPrefix(name, literalPrefix(p)) {
		return false
	}
	return intersect(tokens(p), literal(name))
}

// literal is name's tokens, every rune a literal one.
func literal(name string) []token {
	ts := make([]token, 0, len(name))
	for _, r := range name {
		ts = append(ts, token{kind: tokLit, r: r})
	}
	return ts
}
