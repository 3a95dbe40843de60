package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A duration flag given a number without a unit, or no number at all, is
// refused with one line that names the flag and shows a value that works
// (before: Go's `time: missing unit in duration "3"`), for every duration
// flag of the CLI; a good value still works.
func TestCLIDurationFlagsSayWhatTheyWant(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	for _, tc := range []struct {
		flag string
		args []string
	}{
		{"timeout", []string{"id"}},
		{"wake-limit", []string{"up"}},
		{"wait", []string{"inbox"}},
		{"wait", []string{"room", "ask", "r", "q"}},
		{"ttl", []string{"agent", "register", "x"}},
		{"for", []string{"agent", "mute", "x"}},
		{"ttl", []string{"claim", "p", "--note", "n"}},
		{"wait", []string{"claim", "p", "--note", "n"}},
		{"ttl", []string{"worktree", "add", "n"}},
		{"wait-for", []string{"hook", "claude", "stop"}},
	} {
		for _, bad := range []struct{ value, want string }{
			{"3", "a duration needs a unit: --" + tc.flag + " 3s"},
			{"1.5", "a duration needs a unit: --" + tc.flag + " 1.5s"},
			{"soon", "not a duration: give a number with a unit, as in --" + tc.flag + " 30s"},
		} {
			args := append([]string{"--home", home}, tc.args...)
			args = append(args, "--"+tc.flag, bad.value)
			_, errs, code := run(t, args...)
			if code == 0 || !strings.Contains(errs, bad.want) || strings.Contains(errs, "time:") ||
				strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("%v: exit %d, stderr %q, want one line with %q", args, code, errs, bad.want)
			}
		}
	}
	// A good value is taken: the command goes on to find no node.
	_, errs, code := run(t, "--home", home, "inbox", "--wait", "3s")
	if code == 0 || strings.Contains(errs, "invalid argument") || !strings.Contains(errs, "no node is running") {
		t.Fatalf("inbox --wait 3s with no node: exit %d, stderr %q", code, errs)
	}
}

// Every duration flag of the CLI is made by durationFlag (a flag added with
// pflag's DurationVar would give Go's raw error again).
func TestEveryDurationFlagSaysWhatItWants(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			n++
			if _, ok := f.Value.(*durationValue); !ok {
				t.Errorf("%s --%s is a duration flag not made by durationFlag", c.CommandPath(), f.Name)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	if n < 10 {
		t.Fatalf("found %d duration flags, want at least the 10 the CLI has", n)
	}
}
