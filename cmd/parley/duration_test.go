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
	// The unit a hint adds is the flag's: that of its default (--ttl 30
	// with 30m by default meant 30m, not 30s), one smaller where that
	// goes far past the default (agent register --ttl 10: 10m, not 10h).
	for _, tc := range []struct {
		flag string
		args []string
		unit string // the hint's unit for 3 and 1.5
		ex   string // the example for a value that is no number
		ten  string // the hint for 10
	}{
		{"timeout", []string{"id"}, "s", "30s", "10s"},
		{"wake-limit", []string{"up"}, "m", "1m", "10s"},
		{"wait", []string{"inbox"}, "s", "30s", "10s"},
		{"wait", []string{"room", "ask", "r", "q"}, "s", "30s", "10s"},
		{"ttl", []string{"agent", "register", "x"}, "h", "1h", "10m"},
		{"for", []string{"agent", "mute", "x"}, "m", "30m", "10m"},
		{"ttl", []string{"claim", "p", "--note", "n"}, "m", "30m", "10m"},
		{"wait", []string{"claim", "p", "--note", "n"}, "s", "30s", "10s"},
		{"ttl", []string{"worktree", "add", "n"}, "h", "8h", "10h"},
		{"wait-for", []string{"hook", "claude", "stop"}, "m", "11h59m", "10m"},
	} {
		for _, bad := range []struct{ value, want string }{
			{"3", "a duration needs a unit: --" + tc.flag + " 3" + tc.unit + " "},
			{"1.5", "a duration needs a unit: --" + tc.flag + " 1.5" + tc.unit + " "},
			{"10", "a duration needs a unit: --" + tc.flag + " " + tc.ten + " "},
			{"soon", "not a duration: give a number with a unit, as in --" + tc.flag + " " + tc.ex + " "},
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
