package board

import (
	"testing"
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
		overlapBoth(t, c.p, c.name, c.want)
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
		{"a/**/b", "a/c", false},
		{"**/testdata/**", "testdata/*", true}, // testdata/x
		{"**/x/**", "y/*", false},              // y/x has nothing under it
		{"**/x/**", "y/*/z", true},             // y/x/z
		{"**/a", "**/b", false},
		{"**/a/**", "**/b/**", true}, // a/b/c
		{"src/**/x_test.go", "src/*_test.go", true},
		{"src/**/x_test.go", "src/*/y_test.go", false},
		{"**/x", "ax", false},
		{"**/x", "*x", true},
		{"**/*", "a/b", true},
		{"?/**/?", "a/b", true},
		{"?/**/?", "a", false},
		{"**/**", "a", true},
		{"**/a?", "a", false},
	} {
		overlapBoth(t, c.a, c.b, c.want)
	}
	// "**/" counts as a star.
	if n := Stars("**/a/**/b/**"); n != 3 {
		t.Errorf("Stars = %d, want 3", n)
	}
}
