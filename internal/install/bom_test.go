package install

import (
	"os"
	"strings"
	"testing"
)

// Regression: a config file saved with a UTF-8 byte order mark (as some
// Windows editors save JSON) was refused with "invalid character 'ï'",
// a character the user does not see in the file. Parley now passes over
// the mark and keeps it: the install edits the text after it, doctor reads
// it, and the uninstall leaves the mark and the user's text as they were.
func TestInstallKeepsAByteOrderMark(t *testing.T) {
	const bom = "\ufeff"
	type text struct{ orig, mine, edited string }
	texts := map[format]text{
		fmtJSON: {bom + "{\n  \"model\": \"opus\"\n}\n", `"model": "opus"`, `"model": "opus", "theme": "dark"`},
		fmtTOML: {bom + "model = \"o3\"\n", `model = "o3"`, "model = \"o3\"\ntheme = \"dark\""},
	}
	for _, c := range Clients {
		t.Run(string(c), func(t *testing.T) {
			env := testEnv(t)
			o := opts(c, User)
			o.Command = fakeBinary(t)
			files := map[string]text{}
			for _, tg := range mustTargets(t, env, o) {
				files[tg.path] = texts[tg.format]
				writeFile(t, tg.path, texts[tg.format].orig)
			}
			before := snapshot(t, env.Home)
			mustInstall(t, env, o)
			for f, x := range files {
				b, err := os.ReadFile(f)
				if err != nil || !strings.HasPrefix(string(b), bom) || strings.Count(string(b), bom) != 1 || !strings.Contains(string(b), x.mine) || string(b) == x.orig {
					t.Fatalf("installed, but %s is now %q (%v)", f, b, err)
				}
			}
			if _, fs := Check(env, c, User, HookEvents[c]); len(levels(fs)[Fail]) > 0 {
				t.Errorf("doctor over files with a byte order mark: %v", levels(fs)[Fail])
			}

			// Another hand edits the files since: the uninstall takes out
			// Parley's entries alone, after the mark.
			for f, x := range files {
				b, _ := os.ReadFile(f)
				writeFile(t, f, strings.Replace(string(b), x.mine, x.edited, 1))
			}
			mustUninstall(t, env, c, User)
			for f, x := range files {
				b, _ := os.ReadFile(f)
				if want := strings.Replace(x.orig, x.mine, x.edited, 1); string(b) != want {
					t.Errorf("after uninstall %s is %q; want %q", f, b, want)
				}
			}

			// Untouched since the install: put back byte for byte.
			for f, x := range files {
				writeFile(t, f, x.orig)
			}
			mustInstall(t, env, o)
			mustUninstall(t, env, c, User)
			after := snapshot(t, env.Home)
			for f := range files {
				if after[f] != before[f] {
					t.Errorf("after install and uninstall %s is %q; want %q", f, after[f], before[f])
				}
			}
		})
	}
}

func mustTargets(t *testing.T, env Env, o Options) []target {
	t.Helper()
	ts, err := targets(env, o)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
