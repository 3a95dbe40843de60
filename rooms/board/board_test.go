package board

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"a.go", "a.go", true},
		{"a.go", "b.go", false},
		{"rooms/*.go", "rooms/room.go", true},
		{"rooms/*.go", "rooms/board/fold.go", false},
		{"rooms/**", "rooms/board/fold.go", true},
		{"**", "x/y/z", true},
		{"rooms/*.go", "rooms/board/*", false},
		{"rooms/*", "rooms/board/*", false},
		{"rooms/**/*.go", "rooms/board/*_test.go", true},
		{"*.md", "docs/*.md", false},
		{"**/*.md", "docs/*.md", true},
		{"a?c", "abc", true},
		{"a?c", "a/c", false},
		{"cmd/*/main.go", "cmd/parley/*.go", true},
		{"cmd/*/main.go", "cmd/parley/*.txt", false},
		{"é?", "?é", true},
		{"x/**", "x", true},  // x, with no glob, is also the folder x
		{"x/*", "x", true},   // x/y
		{"x/**", "x/", true}, // not a valid pattern, but the automaton says so
		{"x/*.go", "xy", false},
		{"*a*", "*b*", true},
		{"a*", "b*", false},
	} {
		if got := Overlap(c.a, c.b); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Overlap(c.b, c.a); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestCheckPattern(t *testing.T) {
	for _, p := range []string{"", "/etc/passwd", "../x", "a/./b", "a//b", "a/[ab]", "a\nb", "x/{a,b}"} {
		if err := CheckPattern(p); !errors.Is(err, ErrBadInput) {
			t.Errorf("CheckPattern(%q) = %v, want ErrBadInput", p, err)
		}
	}
	for _, p := range []string{"a.go", "**", "rooms/**/x?.go", "d/*", strings.Repeat("*x", MaxStars)} {
		if err := CheckPattern(p); err != nil {
			t.Errorf("CheckPattern(%q) = %v", p, err)
		}
	}
	if err := CheckPattern(strings.Repeat("*x", MaxStars+1)); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "at most 8") {
		t.Errorf("a path of %d stars: %v", MaxStars+1, err)
	}
}

// TestStarsCountsWhatTokensReads: Stars counts without reading p's tokens;
// it gives the number of "*" and "**" tokens reads, for every string of
// "*", "/", "?" and "a" up to 7 bytes long.
func TestStarsCountsWhatTokensReads(t *testing.T) {
	var walk func(p string)
	walk = func(p string) {
		n := 0
		for _, tk := range tokens(p) {
			if tk.kind == tokStar || tk.kind == tokAny || tk.kind == tokSegs {
				n++
			}
		}
		if got := Stars(p); got != n {
			t.Fatalf("Stars(%q) = %d, tokens has %d", p, got, n)
		}
		if len(p) < 7 {
			for _, c := range []string{"*", "/", "?", "a"} {
				walk(p + c)
			}
		}
	}
	walk("")
}

// intersectEveryRune is intersect trying, at every state, each literal of
// both patterns, "/" and any other rune: what intersect tries at a state
// must decide the same.
func intersectEveryRune(a, b []token) bool {
	alpha := []rune{0, '/'}
	for _, ts := range [][]token{a, b} {
		for _, t := range ts {
			if t.kind == tokLit && !slices.Contains(alpha, t.r) {
				alpha = append(alpha, t.r)
			}
		}
	}
	type state struct{ i, j int }
	visited := map[state]bool{{0, 0}: true}
	stack := []state{{0, 0}}
	push := func(s state) {
		if !visited[s] {
			visited[s] = true
			stack = append(stack, s)
		}
	}
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
		for _, c := range alpha {
			if ni, nj := step(a, s.i, c), step(b, s.j, c); ni >= 0 && nj >= 0 {
				push(state{ni, nj})
			}
		}
	}
	return false
}

// BenchmarkOverlapManyStars: two patterns of MaxPattern bytes with
// MaxStars stars each, the literals between them apart, the most a
// claim's path may ask of the fold (go test -run '^$' -bench
// OverlapManyStars ./rooms/board).
func BenchmarkOverlapManyStars(b *testing.B) {
	mk := func(tag string) string {
		seg := (MaxPattern - len(tag)) / MaxStars
		var sb strings.Builder
		for i := 0; i < MaxStars; i++ {
			sb.WriteByte('*')
			for k := 1; k < seg; k++ {
				sb.WriteByte("abcdefghijklmnopqrstuvwxyz"[(i+k)%26])
			}
		}
		sb.WriteString(tag)
		return sb.String()
	}
	x, y := mk("Q1"), mk("Q2")
	if CheckPattern(x) != nil || CheckPattern(y) != nil {
		b.Fatal(CheckPattern(x), CheckPattern(y))
	}
	for b.Loop() {
		Overlap(x, y)
	}
}

func TestBodies(t *testing.T) {
	b, err := EncodeClaim(ClaimBody{Paths: []string{"b", "a", "b"}, Note: "refactor", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeClaim(b)
	if err != nil || !reflect.DeepEqual(c, ClaimBody{Paths: []string{"a", "b"}, Note: "refactor", TTL: time.Minute}) {
		t.Fatalf("DecodeClaim = %+v, %v", c, err)
	}
	for _, bad := range []ClaimBody{
		{Paths: []string{"a"}, Note: " ", TTL: time.Minute},
		{Paths: []string{"a"}, Note: "x", TTL: 9 * time.Hour},
		{Paths: []string{"a"}, Note: "x", TTL: 0},
		{Note: "x", TTL: time.Minute},
		{Paths: []string{"../a"}, Note: "x", TTL: time.Minute},
	} {
		if _, err := EncodeClaim(bad); !errors.Is(err, ErrBadInput) {
			t.Errorf("EncodeClaim(%+v) = %v, want ErrBadInput", bad, err)
		}
	}
	r, err := EncodeRelease(ReleaseBody{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeRelease(r); err != nil || len(got.Paths) != 0 {
		t.Fatalf("DecodeRelease = %+v, %v", got, err)
	}
	if _, err := DecodeClaim(r); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a release decoded as a claim: %v", err)
	}
	for _, c := range []struct {
		kind, want string
		body       []byte
	}{
		{KindClaim, "claims a b for 1m0s: refactor", b},
		{KindRelease, "releases all its claims", r},
		{KindClaim, "(a malformed claim, ignored)", []byte{0xff}},
		{"message", "", b},
	} {
		if got := Describe(c.kind, c.body); got != c.want {
			t.Errorf("Describe(%s) = %q, want %q", c.kind, got, c.want)
		}
	}
}

func claim(t testing.TB, id, holder string, at int64, ttl time.Duration, note string, paths ...string) Entry {
	t.Helper()
	b, err := EncodeClaim(ClaimBody{Paths: paths, Note: note, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return Entry{ID: id, Room: "r", Holder: holder, Time: at, Kind: KindClaim, Body: b}
}

func release(t testing.TB, id, holder string, at int64, paths ...string) Entry {
	t.Helper()
	b, err := EncodeRelease(ReleaseBody{Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	return Entry{ID: id, Room: "r", Holder: holder, Time: at, Kind: KindRelease, Body: b}
}

func holders(hs []Held) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.Path+"="+h.Holder)
	}
	return out
}

func TestFold(t *testing.T) {
	s := NewState()
	s.Add(claim(t, "e1", "a@p", 1000, time.Minute, "parser", "parse/*.go"))
	s.Add(claim(t, "e2", "b@q", 2000, time.Minute, "lexer", "parse/lex.go")) // loses to e1
	s.Add(claim(t, "e3", "b@q", 2000, time.Minute, "docs", "docs/**"))
	at := time.UnixMilli(3000)
	if got := holders(s.Live(at)); !reflect.DeepEqual(got, []string{"docs/**=b@q", "parse/*.go=a@p"}) {
		t.Fatalf("live = %v", got)
	}
	if r, _ := s.Record("e2"); r.Lost == nil || r.Lost.Holder != "a@p" || r.Lost.Note != "parser" {
		t.Fatalf("e2 = %+v", r)
	}
	if h := s.Conflict("b@q", []string{"parse/x.go"}, at); h == nil || h.Note != "parser" {
		t.Fatalf("conflict = %+v", h)
	}
	if h := s.Conflict("a@p", []string{"parse/x.go"}, at); h != nil {
		t.Fatalf("own claim conflicts: %+v", h)
	}
	// Renewal keeps Since; release frees; expiry frees.
	s.Add(claim(t, "e4", "a@p", 30000, time.Minute, "parser, still", "parse/*.go"))
	live := s.Live(time.UnixMilli(61000))
	if len(live) != 2 || live[1].Since != 1000 || live[1].Expires != 90000 || live[1].Note != "parser, still" {
		t.Fatalf("renewed = %+v", live)
	}
	s.Add(release(t, "e5", "a@p", 40000, "parse/*.go"))
	if h := s.Conflict("b@q", []string{"parse/x.go"}, time.UnixMilli(41000)); h != nil {
		t.Fatalf("released claim conflicts: %+v", h)
	}
	if got := holders(s.Live(time.UnixMilli(62001))); len(got) != 0 {
		t.Fatalf("expired claims live: %v", got)
	}
	if h := s.History("parse/lex.go"); len(h) != 4 {
		t.Fatalf("history of parse/lex.go = %+v", h)
	}
	// A release of everything counts in a path's history where it ended
	// a claim: b@q held parse/lex.go never (its claim lost), docs/** yes.
	s.Add(release(t, "e6", "b@q", 50000))
	if h := s.History("parse/lex.go"); len(h) != 4 {
		t.Fatalf("history of parse/lex.go lists b@q's release of everything: %+v", h)
	}
	if h := s.History("docs/a.md"); len(h) != 2 || h[1].ID != "e6" || !reflect.DeepEqual(h[1].Ended, []string{"docs/**"}) {
		t.Fatalf("history of docs/a.md = %+v", h)
	}
	// A folder's history holds the claims on it and under it.
	for path, want := range map[string]int{"docs": 2, "docs/": 2, "parse": 4, "doc": 0} {
		if h := s.History(path); len(h) != want {
			t.Fatalf("history of %s: %d events, want %d: %+v", path, len(h), want, h)
		}
	}
}

// TestFoldOrderFree: every order of arrival gives the same board (what two
// sides of a partition reach at heal).
func TestFoldOrderFree(t *testing.T) {
	es := []Entry{
		claim(t, "x1", "a@p", 1000, time.Hour, "one", "a/**"),
		claim(t, "x2", "b@q", 1500, time.Hour, "two", "a/b.go"),
		claim(t, "x3", "c@q", 900, time.Hour, "three", "a/*.go"),
		release(t, "x4", "c@q", 2000),
		claim(t, "x5", "b@q", 2500, time.Hour, "again", "a/b.go"),
		claim(t, "x6", "a@p", 2600, time.Hour, "c", "c.go"),
	}
	want := NewState()
	for _, e := range es {
		want.Add(e)
	}
	now := time.UnixMilli(3000)
	for i := range 50 {
		s := NewState()
		for _, j := range rand.Perm(len(es)) {
			s.Add(es[j])
			s.Live(now) // fold as it goes
		}
		if !reflect.DeepEqual(s.Live(now), want.Live(now)) || !reflect.DeepEqual(s.History(""), want.History("")) {
			t.Fatalf("order %d: %v, want %v", i, holders(s.Live(now)), holders(want.Live(now)))
		}
	}
	// x3 comes first: x1 and x2 lose to it; x4 releases it; x5 and x6 hold.
	if got := holders(want.Live(now)); !reflect.DeepEqual(got, []string{"a/b.go=b@q", "c.go=a@p"}) {
		t.Fatalf("live = %v", got)
	}
}

func FuzzDecodeClaim(f *testing.F) {
	b, _ := EncodeClaim(ClaimBody{Paths: []string{"a/**"}, Note: "n", TTL: time.Minute})
	f.Add(b)
	r, _ := EncodeRelease(ReleaseBody{Paths: []string{"x"}})
	f.Add(r)
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := DecodeClaim(b); err == nil {
			again, err := EncodeClaim(c)
			if err != nil || string(again) != string(b) {
				t.Fatalf("claim %x decoded but encodes to %x, %v", b, again, err)
			}
		}
		if r, err := DecodeRelease(b); err == nil {
			again, err := EncodeRelease(r)
			if err != nil || string(again) != string(b) {
				t.Fatalf("release %x decoded but encodes to %x, %v", b, again, err)
			}
		}
	})
}

// globRE is an independent matcher for patterns: a regular expression.
func globRE(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); {
		switch {
		case strings.HasPrefix(p[i:], "**"):
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			if (i == 0 || p[i-1] == '/') && j < len(p) && p[j] == '/' {
				b.WriteString("(?:[^/]+/)*") // a whole segment "**/"
				j++
			} else {
				b.WriteString(".*")
			}
			i = j
		case p[i] == '*':
			b.WriteString("[^/]*")
			i++
		case p[i] == '?':
			b.WriteString("[^/]")
			i++
		default:
			r, n := utf8.DecodeRuneInString(p[i:])
			b.WriteString(regexp.QuoteMeta(string(r)))
			i += n
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// inFolder is the folder rule of Overlap told otherwise: a has no glob
// and the part of b before its first glob begins with a and a "/".
func inFolder(a, b string) bool {
	lit, _, _ := strings.Cut(strings.NewReplacer("?", "*").Replace(b), "*")
	return !strings.ContainsAny(a, "*?") && strings.HasPrefix(lit, a+"/")
}

func FuzzOverlap(f *testing.F) {
	f.Add("a/*.go", "a/b.go", "a/b.go")
	f.Add("**", "x", "x/y")
	f.Add("a/**/c", "*/b/*", "a/b/c")
	f.Add("**/*.go", "a", "main.go")
	f.Add("pkg/new", "pkg/new/*.go", "pkg/new/a.go")
	f.Add("pkg/new", "pkg/newer", "pkg/new/x")
	f.Add("r", "R", "0")
	f.Add("docs/ΛΟΓΟΣ.md", "docs/λογος.md", "docs/λογοσ.md")
	f.Add("?.go", "ſ.go", "S.go")
	f.Fuzz(func(t *testing.T, a, b, name string) {
		if CheckPattern(a) != nil || CheckPattern(b) != nil || len(a) > 40 || len(b) > 40 {
			return
		}
		if got, want := intersect(tokens(a), tokens(b)), intersectEveryRune(tokens(a), tokens(b)); got != want {
			t.Fatalf("intersect(%q, %q) = %v, trying every rune at every state says %v", a, b, got, want)
		}
		// Overlap's shortcuts (literal prefixes apart, two paths with no
		// glob) say what the automata and the folder rule say, on the
		// paths in the form they are compared in (key).
		ka, kb := key(a), key(b)
		if got, want := Overlap(a, b), intersectEveryRune(tokens(ka), tokens(kb)) || inFolder(ka, kb) || inFolder(kb, ka); got != want {
			t.Fatalf("Overlap(%q, %q) = %v, the automata and the folder rule say %v", a, b, got, want)
		}
		if Overlap(a, b) != Overlap(b, a) {
			t.Fatalf("Overlap(%q, %q) is not symmetric", a, b)
		}
		if !Overlap(a, a) {
			t.Fatalf("%q does not overlap itself", a)
		}
		// A path that both match is a witness: they overlap.
		if globRE(a).MatchString(name) && globRE(b).MatchString(name) && !Overlap(a, b) {
			t.Fatalf("%q matches %q and %q, which Overlap says are apart", name, a, b)
		}
		if kn := key(name); CheckPattern(name) == nil && !strings.ContainsAny(name, "*?") && Match(a, name) != (globRE(ka).MatchString(kn) || inFolder(ka, kn)) {
			t.Fatalf("Match(%q, %q) = %v, the regexp and the folder rule say otherwise", a, name, Match(a, name))
		}
	})
}

func BenchmarkLive1000(b *testing.B) {
	s := NewState()
	for i := range 1000 {
		s.Add(claim(b, fmt.Sprintf("e%04d", i), fmt.Sprintf("a%d@p", i%10), int64(1000+i), time.Hour, "work", fmt.Sprintf("pkg%d/file%d.go", i%37, i)))
	}
	now := time.UnixMilli(5000)
	if n := len(s.Live(now)); n != 1000 {
		b.Fatalf("%d live", n)
	}
	b.ResetTimer()
	for range b.N {
		s.Live(now)
	}
}

func BenchmarkConflict1000(b *testing.B) {
	s := NewState()
	for i := range 1000 {
		s.Add(claim(b, fmt.Sprintf("e%04d", i), fmt.Sprintf("a%d@p", i%10), int64(1000+i), time.Hour, "work", fmt.Sprintf("pkg%d/file%d.go", i%37, i)))
	}
	now := time.UnixMilli(5000)
	paths := []string{"pkg3/*_test.go", "other/**"}
	b.ResetTimer()
	for range b.N {
		s.Conflict("z@p", paths, now)
	}
}

func BenchmarkFold1000(b *testing.B) {
	es := make([]Entry, 1000)
	for i := range es {
		es[i] = claim(b, fmt.Sprintf("e%04d", i), fmt.Sprintf("a%d@p", i%10), int64(1000+i), time.Hour, "work", fmt.Sprintf("pkg%d/file%d.go", i%37, i))
	}
	now := time.UnixMilli(5000)
	b.ResetTimer()
	for range b.N {
		s := NewState()
		for _, e := range es {
			s.Add(e)
		}
		s.Live(now)
	}
}
