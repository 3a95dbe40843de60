package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestFlags makes an unknown flag name the flags of its command it was
// near (`up --lisen`: --listen) and where the command's flags are listed;
// cobra says only "unknown flag: --lisen".
func suggestFlags(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
		if !ok {
			return err
		}
		help := fmt.Sprintf("`%s --help` lists its flags", cmd.CommandPath())
		if near := nearFlags(cmd, name); len(near) > 0 {
			return fmt.Errorf("%w (did you mean %s? %s)", err, strings.Join(near, " or "), help)
		}
		return fmt.Errorf("%w (%s)", err, help)
	})
}

// nearFlags are cmd's flags (its own and those it inherits) within two
// edits of name, or that name begins, nearest first.
func nearFlags(cmd *cobra.Command, name string) []string {
	type cand struct {
		flag string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		d := editDistance(strings.ToLower(name), f.Name)
		if d <= 2 || (len(name) >= 3 && strings.HasPrefix(f.Name, strings.ToLower(name))) {
			cs = append(cs, cand{"--" + f.Name, d})
		}
	}
	cmd.LocalFlags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	out := make([]string, 0, 3)
	for _, c := range cs {
		if len(out) == 3 {
			break
		}
		out = append(out, c.flag)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
