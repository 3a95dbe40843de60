package main

import (
	"strings"
	"testing"
)

// A mistyped flag names the flags it was near and where the command's flags
// are listed; cobra alone said only "unknown flag: --lisen".
func TestCLIMistypedFlagSuggestsTheNearOnes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
		not  string
	}{
		{[]string{"up", "--lisen", "x"}, []string{"unknown flag: --lisen", "did you mean --listen?", "`parley up --help`"}, ""},
		{[]string{"--hme", "x", "status"}, []string{"did you mean --home?"}, ""},
		{[]string{"room", "ask", "r", "q", "--wiat"}, []string{"did you mean --wait?", "`parley room ask --help`"}, ""},
		{[]string{"status", "--zzzzzz"}, []string{"unknown flag: --zzzzzz", "`parley status --help` lists its flags"}, "did you mean"},
	} {
		_, errs, code := run(t, append([]string{"--home", home}, tc.args...)...)
		for _, w := range tc.want {
			if code == 0 || !strings.Contains(errs, w) {
				t.Errorf("parley %s: exit %d, %q: want %q", strings.Join(tc.args, " "), code, errs, w)
			}
		}
		if tc.not != "" && strings.Contains(errs, tc.not) {
			t.Errorf("parley %s: %q: says %q", strings.Join(tc.args, " "), errs, tc.not)
		}
	}
}
