package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardChecksAnyFileNameGitTakes: the guard is given the names of the
// files a commit stages as git has them, and a name git takes is no claim
// path: longer than a claim's 512 bytes, with more stars than a claim may
// have, with "*" or "?" in it, with a newline. Each is checked as the file
// it is: a commit of such a file that no claim covers goes through (before,
// the node refused the guard's question as a bad request for the first
// two, and the guard refused every such commit; a file named "src/?.go"
// was taken for a glob and refused over a claim on src/a.go), and one that
// another node's agent's claim covers is refused naming its note.
func TestGuardChecksAnyFileNameGitTakes(t *testing.T) {
	t.Parallel()
	repoA := guardedPair(t, "moving deep", "deep", "src/a.go")
	long := strings.Repeat("l", 200) + "/" + strings.Repeat("m", 200) + "/" + strings.Repeat("n", 200) + ".txt"
	commit := func(name string) (string, error) {
		t.Helper()
		writeFile(t, filepath.Join(repoA, filepath.FromSlash(name)), "x\n")
		gitIn(t, repoA, "add", "--", name)
		out, err := gitTry(repoA, []string{"GIT_CONFIG_GLOBAL=/dev/null"}, "commit", "-q", "-m", "add a file")
		if err != nil {
			gitIn(t, repoA, "reset", "-q")
		}
		return out, err
	}
	for _, name := range []string{
		"free/" + long,
		"free/a*b*c*d*e*f*g*h*i*j.txt",
		"src/?.go",
		"free/two\nlines.txt",
	} {
		if out, err := commit(name); err != nil {
			t.Errorf("the commit of %q, which no claim covers, was refused: %v\n%s", name, err, out)
		}
	}
	for _, name := range []string{
		"deep/" + long,
		"deep/a*b*c*d*e*f*g*h*i*j.txt",
		"deep/two\nlines.txt",
	} {
		if out, err := commit(name); err == nil || !strings.Contains(out, "moving deep") {
			t.Errorf("the commit of %q, which B's claim covers: %v\n%s", name, err, out)
		}
	}
}
