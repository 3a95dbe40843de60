package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// cmdRefRe is a command a text names for the user to run: `parley ...`.
var cmdRefRe = regexp.MustCompile("`parley ([^`]*)`")

// resolveCmd walks root's commands along the words of ref (the part after
// "parley"), as cobra would, and says what in it does not exist: a command
// that only groups others (`parley room view`: room has no "view"), or a
// flag the command it reached lacks. Words with a format verb or "…" and
// placeholders in capitals are arguments.
func resolveCmd(root *cobra.Command, ref string) string {
	c, help := root, false
	words := strings.Fields(ref)
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--help":
			help = true
		case strings.HasPrefix(w, "--"):
			name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
			f := c.Flags().Lookup(name)
			if f == nil {
				f = c.InheritedFlags().Lookup(name)
			}
			if f == nil {
				f = root.PersistentFlags().Lookup(name)
			}
			if f == nil {
				return "no flag --" + name + " on `" + c.CommandPath() + "`"
			}
			if f.Value.Type() != "bool" && !strings.Contains(w, "=") {
				i++ // its value
			}
		case strings.HasPrefix(w, "-"):
		default:
			if sub, _, err := c.Find([]string{w}); err == nil && sub != c {
				c = sub
				continue
			}
			if c.HasSubCommands() && strings.ToUpper(w) != w && !strings.ContainsAny(w, "%…") {
				return "`" + c.CommandPath() + "` has no command " + strconv.Quote(w)
			}
		}
	}
	if c == root && !help || !c.Runnable() && !c.HasSubCommands() {
		return "`" + c.CommandPath() + "` is not a command to run"
	}
	return ""
}

// Every command Parley's texts name for the user to run (in errors, hints
// and help, as `parley ...`) exists, with the flags they give it: an error
// of the local API once sent people to `parley room show` before there was
// one.
func TestNamedCommandsExist(t *testing.T) {
	t.Parallel()
	root := newRoot()
	for ref, ok := range map[string]bool{"room list --json": true, "room log ROOM": true, "--home %s up -d": true, "invites accept ROOM_ID": true,
		"room show ID --as AGENT": true, "room view": false, "room list --jsn": false, "rooms": false} {
		if why := resolveCmd(root, ref); (why == "") != ok {
			t.Fatalf("`parley %s`: %q, want it to exist: %v", ref, why, ok)
		}
	}
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != "../..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, m := range cmdRefRe.FindAllStringSubmatch(s, -1) {
				ref := m[1]
				if strings.ContainsAny(ref, "[]") {
					continue // a pattern, not a command
				}
				seen++
				if why := resolveCmd(root, ref); why != "" {
					t.Errorf("%s: `parley %s`: %s", fset.Position(lit.Pos()), ref, why)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 30 {
		t.Fatalf("found %d commands named in texts: the scan is broken", seen)
	}
}
