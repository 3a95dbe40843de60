package board

import (
	"strings"
	"testing"
)

// TestMatchTakesANameAsItIs: a file's name is matched as it is: a "*" or
// "?" in it is that character, and it may be longer than a claim's path.
// Before, such a name matched no claim, and the guard (which asked with
// Overlap) took "src/?.go" for a glob.
func TestMatchTakesANameAsItIs(t *testing.T) {
	long := "deep/" + strings.Repeat("x", 2*MaxPattern) + ".go"
	for _, c := range []struct {
		p, name string
		want    bool
	}{
		{"src/?.go", "src/?.go", true},
		{"src/*.go", "src/?.go", true},
		{"src/a.go", "src/?.go", false},
		{"src/?.go", "src/a.go", true},
		{"src/a*", "src/a*b", true},
		{"src/a.go", "src/*", false},
		{"deep", long, true},
		{"**/*.go", long, true},
		{"deep/*.txt", long, false},
	} {
		if got := Match(c.p, c.name); got != c.want {
			t.Errorf("Match(%q, %.40q) = %v, want %v", c.p, c.name, got, c.want)
		}
	}
}
