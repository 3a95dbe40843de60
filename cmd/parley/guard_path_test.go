package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitAbsPath: git 2.31 and later answer --path-format=absolute with
// one absolute path; an older git prints the flag back on a line of its
// own, and the path is then asked again without it, in the work tree's
// top folder, a relative answer taken from there.
func TestGitAbsPath(t *testing.T) {
	root := filepath.FromSlash("/repo")
	dir := filepath.Join(root, "sub")
	for _, c := range []struct {
		name     string
		abs      string // the answer with --path-format=absolute
		absErr   bool
		plain    string // the answer without
		want     string
		wantFrom string // the folder the plain question is asked in
	}{
		{name: "new git", abs: "/repo/.git/hooks", want: "/repo/.git/hooks"},
		{name: "old git, relative", abs: "--path-format=absolute\n.git/hooks", plain: ".git/hooks", want: "/repo/.git/hooks", wantFrom: root},
		{name: "old git, hooksPath", abs: "--path-format=absolute\n.husky", plain: ".husky", want: "/repo/.husky", wantFrom: root},
		{name: "old git, absolute", abs: "--path-format=absolute\n/elsewhere/hooks", plain: "/elsewhere/hooks", want: "/elsewhere/hooks", wantFrom: root},
		{name: "flag refused", absErr: true, plain: "../main/.git/worktrees/wt/../../hooks", want: "/main/.git/hooks", wantFrom: root},
		{name: "relative answer", abs: ".git/hooks", plain: ".git/hooks", want: "/repo/.git/hooks", wantFrom: root},
	} {
		t.Run(c.name, func(t *testing.T) {
			var from string
			run := func(d string, args ...string) (string, error) {
				if args[1] == "--path-format=absolute" {
					if d != dir {
						t.Errorf("asked in %s, not %s", d, dir)
					}
					if c.absErr {
						return "", errors.New("unknown option")
					}
					return c.abs, nil
				}
				from = d
				if strings.Join(args, " ") != "rev-parse --git-path hooks" {
					t.Errorf("asked %q", args)
				}
				return c.plain, nil
			}
			got, err := gitAbsPath(run, dir, root, "--git-path", "hooks")
			if err != nil || got != filepath.FromSlash(c.want) || from != c.wantFrom {
				t.Fatalf("got %q %v, asked again in %q; want %q from %q", got, err, from, c.want, c.wantFrom)
			}
		})
	}
	// An answer of more than one line is refused.
	run := func(string, ...string) (string, error) { return "a\nb", nil }
	if got, err := gitAbsPath(run, dir, root, "--git-path", "hooks"); err == nil {
		t.Fatalf("two lines taken: %q", got)
	}
}
