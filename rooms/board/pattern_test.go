package board

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// overlapBoth checks Overlap both ways round.
func overlapBoth(t *testing.T, a, b string, want bool) {
	t.Helper()
	if got := Overlap(a, b); got != want {
		t.Errorf("Overlap(%q, %q) = %v, want %v", a, b, got, want)
	}
	if got := Overlap(b, a); got != want {
		t.Errorf("Overlap(%q, %q) = %v, want %v", b, a, got, want)
	}
}

// TestGlobstar: a "**" that is a whole segment before a "/" is zero or
// more whole segments; any other "**" is any run.
func TestGlobstar(t *testing.T) {
	for _, c := range []struct {
		p, name string
		want    bool
	}{
		// at the start
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", "a.go/x", false},
		{"**/x", "x", true},
		{"**/x", "a/x", true},
		{"**/x", "ax", false},   // whole segments only
		{"**/x", "a/bx", false}, // whole segments only
		{"***/x", "x", true},    // a run of stars is one "**"
		// in the middle
		{"src/**/x_test.go", "src/x_test.go", true},
		{"src/**/x_test.go", "src/a/b/x_test.go", true},
		{"src/**/x_test.go", "srcx_test.go", false},
		{"src/**/x_test.go", "src/ax_test.go", false},
		{"a/**/**/b", "a/b", true},
		{"a/**/**/b", "a/x/y/b", true},
		// at the end: any run, so everything under a, not a itself
		{"a/**", "a/x", true},
		{"a/**", "a/x/y", true},
		{"a/**", "a", false},
		{"a/**", "ab", false},
		{"**/testdata/**", "testdata/golden.txt", true},
		{"**/testdata/**", "x/testdata/y/golden.txt", true},
		{"**/testdata/**", "testdata", false},
		{"**/testdata/**", "mytestdata/x", false},
		{"**", "x", true},
		{"**", "x/y", true},
		// not a whole segment: any run, "/" included
		{"a**/b", "a/b", true},
		{"a**/b", "ax/y/b", true},
		{"**b/c", "x/yb/c", true},
		{"**b/c", "b/c", true},
		{"a/**b", "a/x/yb", true},
	} {
		if got := Match(c.p, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.name, got, c.want)
		}
		if got := globRE(c.p).MatchString(c.name); got != c.want {
			t.Errorf("globRE(%q) on %q = %v, want %v (the test's own matcher)", c.p, c.name, got, c.want)
		}
		if c.want { // else the name may still be a folder with a match inside
			overlapBoth(t, c.p, c.name, true)
		}
	}
	// Two patterns overlap when some path matches both.
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"**/*.go", "*.go", true},          // main.go
		{"**/*.go", "cmd/*/main.go", true}, // cmd/x/main.go
		{"**/*.go", "*.md", false},         // a name ends in .go or in .md
		{"a/**/b", "a/*", true},            // a/b
		{"a/**/b", "a/b/**", true},         // a/b/b
		{"a/**/b", "a/c/**", true},         // a/c/b
		{"a/**/b", "a/*.c", false},
		{"**/testdata/**", "testdata/*", true}, // testdata/x
		{"**/x/**", "y/*", false},              // y/x has nothing under it
		{"**/x/**", "y/*/z", true},             // y/x/z
		{"**/a", "**/b", false},
		{"**/a/**", "**/b/**", true}, // a/b/c
		{"src/**/x_test.go", "src/*_test.go", true},
		{"src/**/x_test.go", "src/*/y_test.go", false},
		{"**/x", "a*", false}, // a*: one segment, never x
		{"**/x", "*x", true},
		{"**/*", "a/b", true},
		{"?/**/?", "a/b", true},
		{"?/**/?", "a*", false},
		{"**/**", "a", true},
		{"**/a?", "?", false},
	} {
		overlapBoth(t, c.a, c.b, c.want)
	}
	// "**/" counts as a star.
	if n := Stars("**/a/**/b/**"); n != 3 {
		t.Errorf("Stars = %d, want 3", n)
	}
}

// TestFolderPath: a path with no glob is also the folder of that name
// (git holds a file or a folder at a path, never both): it overlaps, both
// ways round, a pattern that names something inside it, and Match takes
// it so; a glob that reaches into it only through a star does not (the
// path is more often a file), and the name Match is given is a file.
func TestFolderPath(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"pkg/new", "pkg/new", true},
		{"pkg/new", "pkg/new/a.go", true},
		{"pkg/new", "pkg/new/x/y/a.go", true},
		{"pkg/new", "pkg/new/**", true},
		{"pkg/new", "pkg/new/*.go", true},
		{"pkg/new", "pkg/new/**/*_test.go", true},
		{"pkg/new", "pkg/new*", true}, // pkg/new itself
		{"pkg/new", "pkg", true},      // pkg is a folder too
		{"pkg/new", "pkg/newer", false},
		{"pkg/new", "pkg/newer/a.go", false},
		{"pkg/new", "pkg/ne", false},
		{"pkg/new", "pkg/new?", false},
		{"pkg/new", "*.go", false},
		{"pkg/new", "pkg/*.go", false},
		// a star into the folder: not covered (pkg/new may well be a file)
		{"pkg/new", "pkg/*/a.go", false},
		{"pkg/new", "pkg/ne?/x", false},
		{"pkg/new", "**/a.go", false},
		{"README.md", "**/*.go", false},
		{"rooms/room.go", "**/*_test.go", false},
		{"rooms/room.go", "**/testdata/**", false},
		{"cmd/tool/main.go", "cmd/tool", true},
		{"cmd/tool/main.go", "cmd", true},
		{"cmd/tool/main.go", "cmd/to", false},
		// a/** against a
		{"a/**", "a", true},
		{"a/*", "a", true},
		{"a/?", "a", true},
		{"a/**", "ab", false},
		{"a*/b", "a", false}, // through a star
		// a trailing "/" (a read's path, never a claim's): the folder
		{"pkg/new/", "pkg/new", true},
		{"pkg/new/", "pkg/new/", true},
		{"pkg/new/", "pkg/new/a.go", true},
		{"pkg/new/", "pkg/new/*", true},
		{"pkg/new/", "pkg/*", true}, // pkg/new
		{"pkg/new/", "pkg/ne?", true},
		{"pkg/new/", "pkg/newer", false},
		{"pkg/new/", "pkg/new?", false},
	} {
		overlapBoth(t, c.a, c.b, c.want)
	}
	for _, c := range []struct {
		p, name string
		want    bool
	}{
		{"pkg/new", "pkg/new", true},
		{"pkg/new", "pkg/new/a.go", true},
		{"pkg/new", "pkg/newer", false},
		{"pkg/new/", "pkg/new", true},
		{"pkg/new/", "pkg/new/a.go", true},
		{"pkg/new/a.go", "pkg/new", false}, // the name is a file
		{"pkg/*", "pkg", false},
		{"pkg/*", "pkg/new/a.go", false}, // a glob is no folder
	} {
		if got := Match(c.p, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.name, got, c.want)
		}
	}
}

// TestConflictIndexFindsFolders: the held index, which looks only at
// claims whose literal prefix begins the path's or begins with it, finds
// every claim that overlaps, a folder's included, as Overlap on each
// claim would.
func TestConflictIndexFindsFolders(t *testing.T) {
	s := NewState()
	held := []string{"pkg/new", "cmd/tool/main.go", "**/x_test.go", "src/**/y_test.go", "docs/**", "a*/b", "lib/z"}
	for i, p := range held {
		s.Add(claim(t, fmt.Sprintf("e%d", i), "a@p", 1000, time.Hour, "work", p))
	}
	at := time.UnixMilli(2000)
	if n := len(s.Live(at)); n != len(held) {
		t.Fatalf("%d claims live, want %d", n, len(held))
	}
	for _, c := range []struct {
		path string
		want string // the claim it conflicts with, "" for none
	}{
		{"pkg/new/a.go", "pkg/new"},
		{"pkg/new/**", "pkg/new"},
		{"pkg/new/*.go", "pkg/new"},
		{"pkg", "pkg/new"},
		{"pkg/newer/a.go", ""},
		{"pkg/ne", ""},
		{"cmd/tool", "cmd/tool/main.go"},
		{"cmd", "cmd/tool/main.go"},
		{"cmd/to", ""},
		{"x_test.go", "**/x_test.go"},
		{"q/x_test.go", "**/x_test.go"},
		{"src/y_test.go", "src/**/y_test.go"},
		{"src/a/y_test.go", "src/**/y_test.go"},
		{"src/ay_test.go", ""},
		{"docs", "docs/**"},
		{"a/b", "a*/b"},
		{"a", ""}, // a*/b reaches into a through a star
		{"lib/z/k.go", "lib/z"},
		{"lib/z/", "lib/z"}, // a trailing "/" (no claim's, but a read's)
		{"lib/", "lib/z"},
		{"lib/zz", ""},
		{"pkg/new/", "pkg/new"},
	} {
		got := ""
		if h := s.Conflict("b@q", []string{c.path}, at); h != nil {
			got = h.Path
		}
		if got != c.want {
			t.Errorf("a claim on %s conflicts with %q, want %q", c.path, got, c.want)
		}
		// The index agrees with Overlap on every live claim.
		var brute string
		for _, h := range s.Live(at) {
			if Overlap(c.path, h.Path) && (brute == "" || slices.Index(held, h.Path) < slices.Index(held, brute)) {
				brute = h.Path
			}
		}
		if got != brute {
			t.Errorf("a claim on %s: the index finds %q, Overlap on each claim %q", c.path, got, brute)
		}
	}
}

// TestHistoryOfAFolder: a history read for a path with no glob lists the
// claims on it and inside it, as the conflict check now sees them, and
// the service's list of entries dated ahead matches the same way.
func TestHistoryOfAFolder(t *testing.T) {
	s := NewState()
	s.Add(claim(t, "e1", "a@p", 1000, time.Hour, "new package", "pkg/new"))
	s.Add(claim(t, "e2", "b@q", 2000, time.Hour, "a file in it", "pkg/new/a.go")) // loses to e1
	s.Add(claim(t, "e3", "c@r", 3000, time.Hour, "next door", "pkg/newer/x.go"))
	if r, _ := s.Record("e2"); r.Lost == nil || r.Lost.Path != "pkg/new" {
		t.Fatalf("e2 = %+v, want lost to pkg/new", r)
	}
	for path, want := range map[string][]string{
		"pkg/new":      {"e1", "e2"},
		"pkg/new/":     {"e1", "e2"},
		"pkg/new/a.go": {"e1", "e2"},
		"pkg/new/b.go": {"e1"},
		"pkg":          {"e1", "e2", "e3"},
		"pkg/newer":    {"e3"},
	} {
		var got []string
		for _, r := range s.History(path) {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("history of %s = %v, want %v", path, got, want)
		}
		for _, id := range []string{"e1", "e2", "e3"} {
			r, _ := s.Record(id)
			if got, want := slices.ContainsFunc(r.Paths, historyMatch(path)), slices.Contains(want, id); got != want {
				t.Errorf("historyMatch(%q) on %s: %v, want %v", path, r.Paths, got, want)
			}
		}
	}
}
