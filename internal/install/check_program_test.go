package install

import (
	"os"
	"strings"
	"testing"
)

// Regression: when the program an install named is gone (moved, or built
// elsewhere since), doctor said only "… points at /path/parley, which does
// not exist", unlike its other faults, without what to do. Every fault of
// the program an entry runs now says to install again, which writes this
// program's path.
func TestCheckSaysToInstallAgainWhenTheProgramIsGone(t *testing.T) {
	for _, c := range Clients {
		t.Run(string(c), func(t *testing.T) {
			env := testEnv(t)
			bin := fakeBinary(t)
			o := opts(c, User)
			o.Command = bin
			mustInstall(t, env, o)
			if err := os.Remove(bin); err != nil {
				t.Fatal(err)
			}
			_, fs := Check(env, c, User, HookEvents[c])
			for _, f := range fs {
				if f.Level == Fail && strings.Contains(f.Msg, "does not exist") && !strings.Contains(f.Msg, "parley install") {
					t.Errorf("a fault without what to do: %s", f.Msg)
				}
			}
		})
	}
}

// A project's shared files run parley by name (`"command": "parley"`, for
// everyone who works in it): when it is not on PATH, installing again would
// change nothing, so doctor says to put it on PATH; in one's own config it
// says to install again, which writes this program's full path.
func TestCheckSaysWhatToDoWhenTheProgramIsNotOnPath(t *testing.T) {
	for _, tc := range []struct {
		scope Scope
		want  string
	}{
		{Project, "put parley on PATH"},
		{User, "run `parley install claude` again"},
	} {
		t.Run(string(tc.scope), func(t *testing.T) {
			env := testEnv(t)
			o := opts(Claude, tc.scope)
			o.Command = "parley"
			mustInstall(t, env, o)
			_, fs := Check(env, Claude, tc.scope, HookEvents[Claude])
			n := 0
			for _, f := range fs {
				if f.Level == Fail && strings.Contains(f.Msg, "not on PATH") {
					n++
					if !strings.Contains(f.Msg, ": "+tc.want) {
						t.Errorf("%s; want it to say %q", f.Msg, tc.want)
					}
				}
			}
			if n == 0 {
				t.Fatalf("no finding that parley is not on PATH: %v", fs)
			}
		})
	}
}
