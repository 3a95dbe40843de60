package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// readmeRowRe is a row of README's command table: its first cell, the
// commands it names (`parley claim PATH... --note TEXT …` / `--all`).
var readmeRowRe = regexp.MustCompile("(?m)^\\| (`parley (?:[^|\\\\]|\\\\.)*)\\|")

// Each command README's table opens a row with lists every flag the
// command takes in that row's first cell (README's board rows left out
// claim's and release's --project, board's --as, worktree add's --branch,
// --note and --ttl). The flags below are told elsewhere in README, each
// where it is used.
func TestREADMECommandRowsNameEveryFlag(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := map[string]bool{
		"parley up --detach": true, "parley up --recover": true, "parley up --new-identity": true, // their own rows
		"parley up --loopback": true, "parley up --hand-wait": true, "parley up --wake-limit": true,
		"parley mcp --client": true, "parley mcp --no-start": true, "parley mcp --project": true, "parley mcp --session": true,
		"parley run --tmux-socket": true,
		"parley hook --wait-for":   true, // install writes it into the client's hook
	}
	root := newRoot()
	// A command may open several rows (up, up -d, up --recover): its
	// flags may be told in any of them.
	cells := map[*cobra.Command]string{}
	for _, m := range readmeRowRe.FindAllStringSubmatch(string(b), -1) {
		cell := m[1]
		words := strings.Fields(strings.Trim(strings.SplitN(cell, "`", 3)[1], "`"))
		var path []string
		for _, w := range words[1:] {
			if strings.ToUpper(w) == w || strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
				break
			}
			path = append(path, w)
		}
		c, _, err := root.Find(path)
		if err != nil || c == root || !c.Runnable() {
			continue
		}
		cells[c] += cell
	}
	if len(cells) < 20 {
		t.Fatalf("read %d commands' rows of README's command table: want them all", len(cells))
	}
	for c, cell := range cells {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Hidden || elsewhere[c.CommandPath()+" --"+f.Name] || strings.Contains(cell, "--"+f.Name) {
				return
			}
			t.Errorf("README's rows of `%s` do not name its flag --%s", c.CommandPath(), f.Name)
		})
	}
}
