package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config file saved with a UTF-8 byte order mark (as some Windows editors
// save JSON) is refused with "line 1, column 2: not valid JSON: invalid
// character 'ï' looking for beginning of value": the 'ï' is the first byte
// of the mark read as Latin-1, and the user sees no such character in the
// file. The refusal should name the byte order mark (or the mark be kept
// and the file edited after it).
func TestInstallNamesAByteOrderMark(t *testing.T) {
	env := testEnv(t)
	settings := filepath.Join(env.Home, ".claude", "settings.json")
	writeFile(t, settings, "\ufeff{\n  \"model\": \"opus\"\n}\n")
	p, err := Install(env, opts(Claude, User))
	if err == nil {
		err = p.Apply()
		if err == nil {
			b, rerr := os.ReadFile(settings)
			if rerr != nil || !strings.HasPrefix(string(b), "\ufeff{") || !strings.Contains(string(b), `"model": "opus"`) {
				t.Fatalf("installed, but the file is now %q (%v)", b, rerr)
			}
			return
		}
	}
	if strings.Contains(err.Error(), "ï") || !strings.Contains(strings.ToLower(err.Error()), "byte order mark") {
		t.Fatalf("install over a settings file with a byte order mark: %v; want it named", err)
	}
}

// README: `parley doctor` prints "one line per finding, each fault with what
// to do". When the parley program an install named is gone (moved, or a
// `go build -o` somewhere else since), every entry's fault reads only
// "… points at /path/parley, which does not exist": unlike the other faults
// (an entry gone, a file missing), it does not say to install again (which
// rewrites the entries with this program's path, as a try shows).
func TestCheckSaysWhatToDoWhenTheProgramIsGone(t *testing.T) {
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
