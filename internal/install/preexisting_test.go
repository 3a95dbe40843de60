package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUninstallLeavesAnEntryTheInstallFoundInPlace: a project's .mcp.json
// that a teammate committed already holds Parley's entry, exactly as
// Parley writes it. The install changes nothing ("unchanged"); the
// uninstall, which "takes out exactly what install added", should then
// change nothing either. It takes the teammate's entry out of the shared
// file (and the "mcpServers" object around it), so install then uninstall
// is not the identity.
func TestUninstallLeavesAnEntryTheInstallFoundInPlace(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.ProjectDir, ".mcp.json")
	orig := "{\n  \"mcpServers\": {\n    \"parley\": {\n      \"type\": \"stdio\",\n      \"command\": \"parley\",\n      \"args\": [\"mcp\", \"--client\", \"claude-code\"]\n    }\n  }\n}\n"
	writeFile(t, p, orig)
	ip := mustInstall(t, env, opts(Claude, Project))
	for _, c := range ip.Changes {
		if c.Path == p {
			t.Fatalf("install changed %s:\n%s", p, c.Diff)
		}
	}
	mustUninstall(t, env, Claude, Project)
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != orig {
		t.Errorf("install then uninstall changed the committed .mcp.json:\nbefore: %q\nafter:  %q", orig, got)
	}
}

// TestUninstallLeavesFoundEntriesOfEveryClient: files that already hold
// every entry of Parley's (server, hooks, notify), as Parley writes them,
// with no record of an install: the install changes nothing, and the
// uninstall leaves them all, saying so. An install run twice is still
// taken out in full: the second one finds the first one's entries, which
// its record names.
func TestUninstallLeavesFoundEntriesOfEveryClient(t *testing.T) {
	for _, c := range Clients {
		for _, s := range []Scope{User, Project} {
			t.Run(string(c)+"-"+string(s), func(t *testing.T) {
				env := testEnv(t)
				first := mustInstall(t, env, opts(c, s))
				if !first.Changed() {
					t.Fatal("the first install changed nothing")
				}
				want := map[string]string{}
				for _, ch := range first.Changes {
					want[ch.Path] = string(mustRead(t, ch.Path))
				}
				// The same files, with no record of Parley's: a teammate's.
				if err := os.RemoveAll(filepath.Join(env.ParleyHome, "install")); err != nil {
					t.Fatal(err)
				}
				if p := mustInstall(t, env, opts(c, s)); p.Changed() {
					t.Fatalf("install changed files that held its entries:\n%s", p.Diff())
				}
				mustInstall(t, env, opts(c, s)) // twice: still found, not Parley's
				u := mustUninstall(t, env, c, s)
				if u.Changed() {
					t.Errorf("uninstall changed files whose entries were there before the install:\n%s", u.Diff())
				}
				for path, w := range want {
					if got := string(mustRead(t, path)); got != w {
						t.Errorf("%s: %q, want %q", path, got, w)
					}
				}
				if !strings.Contains(strings.Join(u.Notes, "\n"), "there before the install") {
					t.Errorf("no note of the entries left in place: %q", u.Notes)
				}

				// From clean: installed twice, uninstalled once, all gone.
				env = testEnv(t)
				mustInstall(t, env, opts(c, s))
				mustInstall(t, env, opts(c, s))
				mustUninstall(t, env, c, s)
				for _, ch := range first.Changes {
					// first's paths are in the other env: map them over.
					p := ch.Path
					for _, pair := range [][2]string{{filepath.Dir(first.env.Home), filepath.Dir(env.Home)}} {
						if r, err := filepath.Rel(pair[0], p); err == nil {
							p = filepath.Join(pair[1], r)
						}
					}
					if b, err := os.ReadFile(p); err == nil {
						t.Errorf("%s, which Parley created, is still there after install, install, uninstall: %q", p, b)
					}
				}
			})
		}
	}
}

// TestUninstallLeavesTheFoundServerAndTakesOutTheHooksItAdded: the
// server entry was there before the install (no record of Parley's), the
// hooks are the install's: the uninstall takes out the hooks alone, and
// the files are as they were before the install.
func TestUninstallLeavesTheFoundServerAndTakesOutTheHooksItAdded(t *testing.T) {
	for _, c := range Clients {
		for _, s := range []Scope{User, Project} {
			t.Run(string(c)+"-"+string(s), func(t *testing.T) {
				env := testEnv(t)
				o := opts(c, s)
				o.Hooks = nil
				mustInstall(t, env, o)
				if err := os.RemoveAll(filepath.Join(env.ParleyHome, "install")); err != nil {
					t.Fatal(err)
				}
				want := snapshot(t, env.Home, env.ProjectDir)
				mustInstall(t, env, opts(c, s))
				mustUninstall(t, env, c, s)
				got := snapshot(t, env.Home, env.ProjectDir)
				for p, w := range want {
					if got[p] != w {
						t.Errorf("%s: %q, want %q", p, got[p], w)
					}
				}
				for p := range got {
					if _, ok := want[p]; !ok {
						t.Errorf("%s is left: %q", p, got[p])
					}
				}
			})
		}
	}
}
