package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

const testBin = "/opt/parley/bin/parley"

// testEnv is a home folder, a project folder and a Parley home in a temp
// folder.
func testEnv(t *testing.T) Env {
	t.Helper()
	root := t.TempDir()
	env := Env{
		Home:       filepath.Join(root, "home"),
		ProjectDir: filepath.Join(root, "project"),
		ParleyHome: filepath.Join(root, "parley-home"),
	}
	for _, d := range []string{env.Home, env.ProjectDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

// place copies a testdata file to path (relative to dir).
func place(t *testing.T, dir, rel, testdata string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", testdata))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// realistic puts the user's existing config files in place for a client.
func realistic(t *testing.T, env Env, c Client) {
	t.Helper()
	switch c {
	case Claude:
		place(t, env.Home, ".claude.json", "claude.json")
		place(t, env.Home, ".claude/settings.json", "claude-settings.json")
		place(t, env.ProjectDir, ".mcp.json", "mcp.json")
	case Codex:
		place(t, env.Home, ".codex/config.toml", "codex-config.toml")
		place(t, env.Home, ".codex/hooks.json", "codex-hooks.json")
	case Gemini:
		place(t, env.Home, ".gemini/settings.json", "gemini-settings.json")
	case OpenCode:
		place(t, env.Home, ".config/opencode/opencode.jsonc", "opencode.jsonc")
	}
}

// snapshot reads every file and folder under dirs.
func snapshot(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				out[p] = "<dir>"
				return nil
			}
			b, err := os.ReadFile(p)
			out[p] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func sameSnapshot(t *testing.T, want, got map[string]string) {
	t.Helper()
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			t.Errorf("%s is gone", p)
		case g != w:
			t.Errorf("%s differs:\nwant %q\ngot  %q", p, w, g)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s is new", p)
		}
	}
}

func opts(c Client, s Scope) Options {
	cmd := testBin
	if s == Project {
		cmd = "parley"
	}
	return Options{Client: c, Scope: s, Command: cmd, Hooks: HookEvents[c]}
}

func mustInstall(t *testing.T, env Env, o Options) *Plan {
	t.Helper()
	p, err := Install(env, o)
	if err != nil {
		t.Fatalf("install %s %s: %v", o.Client, o.Scope, err)
	}
	if err := p.Apply(); err != nil {
		t.Fatalf("apply: %v", err)
	}
	return p
}

func mustUninstall(t *testing.T, env Env, c Client, s Scope) *Plan {
	t.Helper()
	p, err := Uninstall(env, c, s)
	if err != nil {
		t.Fatalf("uninstall %s %s: %v", c, s, err)
	}
	if err := p.Apply(); err != nil {
		t.Fatalf("apply: %v", err)
	}
	return p
}

// decodeAny decodes a JSON, JSONC or TOML file for comparison.
func decodeAny(t *testing.T, path string, b []byte) any {
	t.Helper()
	if strings.HasSuffix(path, ".toml") {
		m := map[string]any{}
		if err := toml.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, b)
		}
		return m
	}
	std, err := hujson.Standardize(append([]byte(nil), b...))
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	var v any
	if err := json.Unmarshal(std, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// superset checks that after holds everything before did: the same keys
// with the same values, arrays at least as long with the same first items.
func superset(t *testing.T, where string, before, after any) {
	t.Helper()
	switch b := before.(type) {
	case map[string]any:
		a, ok := after.(map[string]any)
		if !ok {
			t.Errorf("%s: was an object, now %T", where, after)
			return
		}
		for k, v := range b {
			av, ok := a[k]
			if !ok {
				t.Errorf("%s.%s is gone", where, k)
				continue
			}
			superset(t, where+"."+k, v, av)
		}
	case []any:
		a, ok := after.([]any)
		if !ok || len(a) < len(b) {
			t.Errorf("%s: was %v, now %v", where, b, after)
			return
		}
		for i := range b {
			superset(t, where, b[i], a[i])
		}
	default:
		if !reflect.DeepEqual(before, after) {
			t.Errorf("%s: was %v, now %v", where, before, after)
		}
	}
}

// linesKept checks that every line of before is in after, in order (a
// comma added at a line's end aside): the edit was a minimal one.
func linesKept(t *testing.T, path string, before, after []byte) {
	t.Helper()
	al := strings.Split(strings.ReplaceAll(string(after), ",", ""), "\n")
	k := 0
	for _, l := range strings.Split(strings.ReplaceAll(string(before), ",", ""), "\n") {
		for k < len(al) && al[k] != l {
			k++
		}
		if k == len(al) {
			t.Errorf("%s: the line %q is gone or moved", path, l)
			return
		}
		k++
	}
}

func TestInstallTwiceAndUninstall(t *testing.T) {
	for _, c := range Clients {
		for _, s := range []Scope{User, Project} {
			t.Run(string(c)+"-"+string(s), func(t *testing.T) {
				env := testEnv(t)
				realistic(t, env, c)
				orig := snapshot(t, env.Home, env.ProjectDir)

				p := mustInstall(t, env, opts(c, s))
				if !p.Changed() {
					t.Fatal("the first install changed nothing")
				}
				for _, ch := range p.Changes {
					after, err := os.ReadFile(ch.Path)
					if err != nil {
						t.Fatal(err)
					}
					if before, ok := orig[ch.Path]; ok {
						superset(t, ch.Path, decodeAny(t, ch.Path, []byte(before)), decodeAny(t, ch.Path, after))
						linesKept(t, ch.Path, []byte(before), after)
					}
					if !strings.Contains(ch.Diff, "+") {
						t.Errorf("no diff for %s: %q", ch.Path, ch.Diff)
					}
				}
				checkEntries(t, env, opts(c, s))
				installed := snapshot(t, env.Home, env.ProjectDir)
				rec, _ := os.ReadFile(recordPath(env, c, s))

				// A second install changes nothing, not even the record.
				p2, err := Install(env, opts(c, s))
				if err != nil {
					t.Fatal(err)
				}
				if p2.Changed() {
					t.Fatalf("the second install would change:\n%s", p2.Diff())
				}
				if err := p2.Apply(); err != nil {
					t.Fatal(err)
				}
				sameSnapshot(t, installed, snapshot(t, env.Home, env.ProjectDir))
				if rec2, _ := os.ReadFile(recordPath(env, c, s)); !bytes.Equal(rec, rec2) {
					t.Errorf("the record changed:\n%s\n%s", rec, rec2)
				}

				// Uninstall puts every file back byte for byte and removes
				// the files and folders it created.
				u := mustUninstall(t, env, c, s)
				for _, ch := range u.Changes {
					if !ch.Restore {
						t.Errorf("%s was not restored from its copy", ch.Path)
					}
				}
				sameSnapshot(t, orig, snapshot(t, env.Home, env.ProjectDir))
				if _, err := os.Stat(recordPath(env, c, s)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the record is still there: %v", err)
				}
				// Nothing left to remove.
				u2, err := Uninstall(env, c, s)
				if err != nil || u2.Changed() {
					t.Fatalf("second uninstall: %v %s", err, u2.Diff())
				}
			})
		}
	}
}

// checkEntries checks Parley's entries in each file an install writes.
func checkEntries(t *testing.T, env Env, o Options) {
	t.Helper()
	ts, err := targets(env, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range ts {
		b, err := os.ReadFile(tg.path)
		if err != nil {
			if len(tg.hooks) == 0 && tg.server == nil {
				continue
			}
			t.Fatalf("%s: %v", tg.path, err)
		}
		v := decodeAny(t, tg.path, b)
		m := v.(map[string]any)
		if tg.format == fmtTOML {
			srv, _ := dig(m, tg.server)
			if srv["command"] != o.Command || !reflect.DeepEqual(srv["args"], []any{"mcp", "--client", "codex"}) {
				t.Errorf("%s: server %v", tg.path, srv)
			}
			// Codex reads notify only from the user's config.
			if o.Scope == User && !isParleyNotify(m["notify"]) || o.Scope == Project && m["notify"] != nil {
				t.Errorf("%s: notify %v", tg.path, m["notify"])
			}
			continue
		}
		if tg.server != nil {
			parent, _ := dig(m, tg.server[:len(tg.server)-1])
			srv := parent[tg.server[len(tg.server)-1]]
			if !isParleyServer(srv) || serverCommand(srv) != o.Command {
				t.Errorf("%s: server %v", tg.path, srv)
			}
		}
		for ev := range tg.hooks {
			arr, _ := dig(m, []string{"hooks"})
			groups, _ := arr[ev].([]any)
			found := 0
			for _, g := range groups {
				for _, h := range g.(map[string]any)["hooks"].([]any) {
					cmd, _ := h.(map[string]any)["command"].(string)
					if e, ok := parleyHookEvent(cmd, o.Client); ok && e == ev {
						found++
						// Claude Code's Stop waiter runs in the background and
						// keeps a timeout as long as it waits.
						hm := h.(map[string]any)
						if o.Client == Claude && ev == "Stop" && (hm["asyncRewake"] != true || hm["timeout"] != float64(ClaudeStopTimeout)) {
							t.Errorf("%s: the Stop hook %v", tg.path, hm)
						}
						if !strings.HasPrefix(cmd, shellQuote(o.Command)+" hook ") {
							t.Errorf("%s: hook command %q", tg.path, cmd)
						}
					}
				}
			}
			if found != 1 {
				t.Errorf("%s: %d Parley hooks for %s", tg.path, found, ev)
			}
		}
	}
}

// userEdit changes a file the way a person (or the client) would, in a
// part that is not Parley's.
func userEdit(path string, b []byte) []byte {
	if strings.HasSuffix(path, ".toml") {
		return append(append([]byte(nil), b...), "\n[mcp_servers.extra]\ncommand = \"extra\"\n"...)
	}
	i := bytes.IndexByte(b, '{')
	return append(append(append([]byte(nil), b[:i+1]...), "\n  \"addedLater\": true,"...), b[i+1:]...)
}

func TestUninstallAfterEditsKeepsThem(t *testing.T) {
	for _, c := range Clients {
		for _, lost := range []bool{false, true} {
			name := string(c)
			if lost {
				name += "-record-lost"
			}
			t.Run(name, func(t *testing.T) {
				env := testEnv(t)
				realistic(t, env, c)
				orig := snapshot(t, env.Home)
				p := mustInstall(t, env, opts(c, User))
				want := map[string]string{}
				for k, v := range orig {
					want[k] = v
				}
				for _, ch := range p.Changes {
					b, _ := os.ReadFile(ch.Path)
					if err := os.WriteFile(ch.Path, userEdit(ch.Path, b), 0o644); err != nil {
						t.Fatal(err)
					}
					want[ch.Path] = string(userEdit(ch.Path, []byte(orig[ch.Path])))
				}
				if lost {
					if err := os.RemoveAll(filepath.Join(env.ParleyHome, "install")); err != nil {
						t.Fatal(err)
					}
				}
				u := mustUninstall(t, env, c, User)
				for _, ch := range u.Changes {
					if ch.Restore {
						t.Errorf("%s was restored from the copy, losing the edit", ch.Path)
					}
				}
				sameSnapshot(t, want, snapshot(t, env.Home))
			})
		}
	}
}

func TestUninstallAfterClientRewrote(t *testing.T) {
	// Claude Code rewrites ~/.claude.json whole; Parley's entry must still
	// come out, and nothing else.
	env := testEnv(t)
	realistic(t, env, Claude)
	mustInstall(t, env, opts(Claude, User))
	path := filepath.Join(env.Home, ".claude.json")
	b, _ := os.ReadFile(path)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	v["numStartups"] = 43.0
	out, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	mustUninstall(t, env, Claude, User)
	after, _ := os.ReadFile(path)
	got := decodeAny(t, path, after)
	orig := decodeAny(t, path, mustRead(t, "testdata/claude.json"))
	orig.(map[string]any)["numStartups"] = 43.0
	if !reflect.DeepEqual(got, orig) {
		t.Errorf("after uninstall:\n%s", after)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInstallRefusesInvalidFiles(t *testing.T) {
	cases := []struct {
		client Client
		rel    string
		text   string
		line   int
	}{
		{Claude, ".claude.json", "{\n  \"a\": 1,\n  \"b\": \n}\n", 4},
		{Claude, ".claude.json", "{\n  // a comment\n  \"a\": 1\n}\n", 2},
		{Claude, ".claude/settings.json", "{\n  \"hooks\": {\n    \"Stop\": [}\n}\n", 3},
		{Claude, ".claude.json", "[1, 2]\n", 1},
		{Codex, ".codex/config.toml", "model = \"o3\"\n\n[mcp_servers.docs\ncommand = \"x\"\n", 3},
		{Codex, ".codex/config.toml", "a = 1\na = 2\n", 2},
		{Gemini, ".gemini/settings.json", "{\n  \"ui\": {\"theme\": \"x\",},\n}\n", 2},
		{Gemini, ".gemini/settings.json", "{\n  \"ui\": {\n    \"theme\": \"x\"\n  \n", 5},
		{OpenCode, ".config/opencode/opencode.json", "{\n  \"mcp\": {\n    \"x\": {\"type\": \"local\" \"command\": []}\n  }\n}\n", 3},
	}
	for _, tc := range cases {
		t.Run(string(tc.client)+"-"+filepath.Base(tc.rel), func(t *testing.T) {
			env := testEnv(t)
			p := filepath.Join(env.Home, tc.rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, env.Home)
			_, err := Install(env, opts(tc.client, User))
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			if ce.Path != p || ce.Line != tc.line {
				t.Errorf("err at %s line %d, want %s line %d: %v", ce.Path, ce.Line, p, tc.line, err)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("the message names no line: %v", err)
			}
			sameSnapshot(t, before, snapshot(t, env.Home))
			if _, err := os.Stat(filepath.Join(env.ParleyHome, "install")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("install wrote a record: %v", err)
			}
			// Uninstall refuses too, and changes nothing.
			if _, err := Uninstall(env, tc.client, User); tc.rel != ".claude/settings.json" && !errors.Is(err, ErrInvalid) {
				t.Errorf("uninstall: %v", err)
			}
		})
	}
}

func TestInstallRefusesConflicts(t *testing.T) {
	cases := []struct {
		client Client
		rel    string
		text   string
		line   int
	}{
		{Claude, ".claude.json", "{\n  \"mcpServers\": [\n  ]\n}\n", 2},
		{Claude, ".claude/settings.json", "{\n  \"hooks\": {\n    \"Stop\": {}\n  }\n}\n", 3},
		{Claude, ".claude.json", "{\n  \"mcpServers\": {},\n  \"mcpServers\": {}\n}\n", 2},
		{Codex, ".codex/config.toml", "[mcp_servers]\nparley = { command = \"x\" }\n", 2},
		{Codex, ".codex/config.toml", "mcp_servers.parley.command = \"x\"\n", 1},
		{Codex, ".codex/config.toml", "mcp_servers = { docs = { command = \"d\" } }\n", 1},
	}
	for _, tc := range cases {
		env := testEnv(t)
		p := filepath.Join(env.Home, tc.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Install(env, opts(tc.client, User))
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || ce.Line != tc.line {
			t.Errorf("%q: err = %v, want a conflict at line %d", tc.text, err, tc.line)
		}
	}
	// The message names what is in the way: an inline mcp_servers is not
	// "mcp_servers.parley defined in another form".
	env := testEnv(t)
	writeFile(t, filepath.Join(env.Home, ".codex", "config.toml"), "mcp_servers = { docs = { command = \"d\" } }\n")
	_, err := Install(env, opts(Codex, User))
	if err == nil || !strings.Contains(err.Error(), "mcp_servers is an inline table here") || strings.Contains(err.Error(), "mcp_servers.parley is defined") {
		t.Errorf("inline mcp_servers: %v", err)
	}
}

// A config file its user made read-only is refused, by install and by
// uninstall, and kept byte for byte (a rename would replace it all the same).
func TestReadOnlyFileIsRefused(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Home, ".gemini", "settings.json")
	writeFile(t, p, "{\n  \"theme\": \"dark\"\n}\n")
	if err := os.Chmod(p, 0o444); err != nil {
		t.Fatal(err)
	}
	_, err := Install(env, opts(Gemini, User))
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), p) {
		t.Fatalf("install into a read-only file: %v", err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	mustInstall(t, env, opts(Gemini, User))
	after := mustRead(t, p)
	if err := os.Chmod(p, 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := Uninstall(env, Gemini, User); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("uninstall from a read-only file: %v", err)
	}
	if !bytes.Equal(mustRead(t, p), after) {
		t.Fatal("the read-only file changed")
	}
}

func TestInstallReplacesAHandMadeEntryAndUninstallPutsItBack(t *testing.T) {
	env := testEnv(t)
	path := filepath.Join(env.Home, ".gemini", "settings.json")
	orig := "{\n  // added by hand from the README\n  \"mcpServers\": {\n    \"parley\": {\"command\": \"parley\", \"args\": [\"mcp\"]}\n  }\n}\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	mustInstall(t, env, opts(Gemini, User))
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte(testBin)) || !bytes.Contains(b, []byte("// added by hand")) {
		t.Fatalf("after install:\n%s", b)
	}
	edited := userEdit(path, b)
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	mustUninstall(t, env, Gemini, User)
	if got, _ := os.ReadFile(path); string(got) != string(userEdit(path, []byte(orig))) {
		t.Errorf("after uninstall:\n%s", got)
	}
}

func TestHookSubsetAndNoHooks(t *testing.T) {
	env := testEnv(t)
	realistic(t, env, Claude)
	settings := filepath.Join(env.Home, ".claude", "settings.json")
	orig, _ := os.ReadFile(settings)

	o := opts(Claude, User)
	o.Hooks = nil
	p := mustInstall(t, env, o)
	for _, ch := range p.Changes {
		if ch.Path == settings {
			t.Fatalf("install without hooks changed %s:\n%s", settings, ch.Diff)
		}
	}
	o.Hooks = HookEvents[Claude]
	mustInstall(t, env, o)
	o.Hooks = []string{"PostToolUse"}
	mustInstall(t, env, o)
	b, _ := os.ReadFile(settings)
	m := decodeAny(t, settings, b).(map[string]any)
	hooks := m["hooks"].(map[string]any)
	if _, ok := hooks["Stop"]; ok {
		t.Errorf("Stop hook left after a narrower install:\n%s", b)
	}
	if len(hooks["PostToolUse"].([]any)) != 2 {
		t.Errorf("PostToolUse:\n%s", b)
	}
	mustUninstall(t, env, Claude, User)
	if got, _ := os.ReadFile(settings); !bytes.Equal(got, orig) {
		t.Errorf("after uninstall:\n%s", got)
	}
	if _, err := Install(env, Options{Client: Gemini, Command: testBin, Hooks: []string{"Stop"}}); err == nil {
		t.Error("Gemini has no Stop hook, but install took it")
	}
}

func TestCRLFAndModeAndSymlink(t *testing.T) {
	env := testEnv(t)
	crlf := func(rel, testdata string) string {
		p := place(t, env.Home, rel, testdata)
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o640); err != nil {
			t.Fatal(err)
		}
		return p
	}
	toml := crlf(".codex/config.toml", "codex-config.toml")
	hooks := crlf(".codex/hooks.json", "codex-hooks.json")
	// config.toml is a link into a dotfiles folder.
	dot := filepath.Join(env.Home, "dotfiles", "codex.toml")
	if err := os.MkdirAll(filepath.Dir(dot), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(toml, dot); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dot, toml); err != nil {
		t.Fatal(err)
	}
	orig := snapshot(t, env.Home)
	mustInstall(t, env, opts(Codex, User))
	for _, p := range []string{toml, hooks} {
		b, _ := os.ReadFile(p)
		if n, m := bytes.Count(b, []byte("\n")), bytes.Count(b, []byte("\r\n")); n != m {
			t.Errorf("%s: %d line ends, %d of them CRLF:\n%q", p, n, m, b)
		}
	}
	if fi, _ := os.Lstat(toml); fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("config.toml is no longer a link")
	}
	if fi, _ := os.Stat(hooks); fi.Mode().Perm() != 0o640 {
		t.Errorf("hooks.json mode %v, want 0640", fi.Mode().Perm())
	}
	mustUninstall(t, env, Codex, User)
	sameSnapshot(t, orig, snapshot(t, env.Home))
}

func TestNewUserFilesArePrivate(t *testing.T) {
	env := testEnv(t)
	mustInstall(t, env, opts(Gemini, User))
	fi, err := os.Stat(filepath.Join(env.Home, ".gemini", "settings.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new settings.json: %v %v", fi, err)
	}
}

func TestCodexNotifyAndFeatures(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Home, ".codex", "config.toml")
	orig := "notify = [\"notify-send\", \"Codex\"]\n\n[features]\nhooks = false\n"
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := mustInstall(t, env, opts(Codex, User))
	text := strings.Join(plan.Notes, "\n")
	if !strings.Contains(text, `notify = ["notify-send", "Codex"]`) || !strings.Contains(text, "hooks = false") {
		t.Errorf("notes: %s", text)
	}
	b, _ := os.ReadFile(p)
	if !bytes.HasPrefix(b, []byte(orig)) {
		t.Errorf("the user's notify or features changed:\n%s", b)
	}
	mustUninstall(t, env, Codex, User)
	if b, _ := os.ReadFile(p); string(b) != orig {
		t.Errorf("after uninstall:\n%s", b)
	}
}

func TestApplyStopsWhenTheFileChanged(t *testing.T) {
	env := testEnv(t)
	realistic(t, env, Gemini)
	p, err := Install(env, opts(Gemini, User))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(env.Home, ".gemini", "settings.json")
	changed := append(mustRead(t, path), ' ')
	if err := os.WriteFile(path, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(); !errors.Is(err, ErrRaced) {
		t.Fatalf("apply: %v", err)
	}
	if b := mustRead(t, path); !bytes.Equal(b, changed) {
		t.Error("apply wrote over the changed file")
	}
}

func TestDryRunDiff(t *testing.T) {
	env := testEnv(t)
	realistic(t, env, Codex)
	orig := snapshot(t, env.Home)
	p, err := Install(env, opts(Codex, User))
	if err != nil {
		t.Fatal(err)
	}
	d := p.Diff()
	for _, want := range []string{"--- a" + filepath.Join(env.Home, ".codex", "config.toml"), "+[mcp_servers.parley]", "+notify = [", "@@"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	sameSnapshot(t, orig, snapshot(t, env.Home))
}

func TestParseHookCommands(t *testing.T) {
	cases := []struct {
		cmd   string
		event string
		ok    bool
	}{
		{"/usr/local/bin/parley hook claude Stop", "Stop", true},
		{"parley --home '/tmp/my home' hook claude PostToolUse", "PostToolUse", true},
		{"parley --home=/x hook claude SessionStart", "SessionStart", true},
		{"'/opt/my tools/parley' hook claude Stop", "Stop", true},
		{"parley hook codex Stop", "", false},
		{"parleyx hook claude Stop", "", false},
		{"npx prettier --write", "", false},
		{"parley room say x", "", false},
	}
	for _, tc := range cases {
		ev, ok := parleyHookEvent(tc.cmd, Claude)
		if ev != tc.event || ok != tc.ok {
			t.Errorf("%q: %q %v", tc.cmd, ev, ok)
		}
	}
	o := Options{Client: Claude, Command: "/opt/my tools/parley", Args: []string{"--home", "/tmp/a b"}}
	cmd := o.hookCommand("Stop")
	if got := splitCommand(cmd); !reflect.DeepEqual(got, []string{"/opt/my tools/parley", "--home", "/tmp/a b", "hook", "claude", "Stop"}) {
		t.Errorf("%q splits into %q", cmd, got)
	}
}

func TestProgramWithAnotherName(t *testing.T) {
	// A parley binary called something else is recognised through the
	// record.
	env := testEnv(t)
	realistic(t, env, Codex)
	orig := snapshot(t, env.Home)
	bin := filepath.Join(filepath.Dir(fakeBinary(t)), "parley-nightly")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := opts(Codex, User)
	o.Command = bin
	mustInstall(t, env, o)
	if p, err := Install(env, o); err != nil || p.Changed() {
		t.Fatalf("second install: %v %v", err, p)
	}
	if installed, fs := Check(env, Codex, User, HookEvents[Codex]); !installed || len(levels(fs)[Fail]) > 0 {
		t.Fatalf("check: %v %v", installed, fs)
	}
	mustUninstall(t, env, Codex, User)
	sameSnapshot(t, orig, snapshot(t, env.Home))
}

func TestEmptyFilesStayEmpty(t *testing.T) {
	for _, c := range Clients {
		env := testEnv(t)
		ts, err := targets(env, opts(c, User))
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range ts {
			if err := os.MkdirAll(filepath.Dir(tg.path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(tg.path, []byte("\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		orig := snapshot(t, env.Home)
		mustInstall(t, env, opts(c, User))
		checkEntries(t, env, opts(c, User))
		mustUninstall(t, env, c, User)
		sameSnapshot(t, orig, snapshot(t, env.Home))
	}
}

func TestUninstallRemovesTheContainersItCreated(t *testing.T) {
	for _, lost := range []bool{false, true} {
		env := testEnv(t)
		p := filepath.Join(env.Home, ".claude", "settings.json")
		orig := "{\n  \"model\": \"opus\"\n}\n"
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(orig), 0o644); err != nil {
			t.Fatal(err)
		}
		mustInstall(t, env, opts(Claude, User))
		if err := os.WriteFile(p, userEdit(p, mustRead(t, p)), 0o644); err != nil {
			t.Fatal(err)
		}
		if lost {
			if err := os.RemoveAll(filepath.Join(env.ParleyHome, "install")); err != nil {
				t.Fatal(err)
			}
		}
		mustUninstall(t, env, Claude, User)
		if got, want := string(mustRead(t, p)), string(userEdit(p, []byte(orig))); got != want {
			t.Errorf("record lost %v: after uninstall\n%s\nwant\n%s", lost, got, want)
		}
	}
}

func TestCodexSubTables(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Home, ".codex", "config.toml")
	orig := "model = \"o3\"\n"
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	mustInstall(t, env, opts(Codex, User))
	installed := string(mustRead(t, p))
	// The person adds a sub-table under Parley's table, and edits elsewhere:
	// the server is theirs now, and uninstall leaves it.
	b := installed + "\n[mcp_servers.parley.tools]\nx = 1\n"
	b = strings.Replace(b, "model = \"o3\"", "model = \"o4\"", 1)
	if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	u := mustUninstall(t, env, Codex, User)
	if !strings.Contains(strings.Join(u.Notes, "\n"), "it also sets tools") {
		t.Errorf("notes: %q", u.Notes)
	}
	if got := string(mustRead(t, p)); !strings.Contains(got, "[mcp_servers.parley]\ncommand = ") || !strings.HasSuffix(got, "[mcp_servers.parley.tools]\nx = 1\n") {
		t.Errorf("after uninstall:\n%s", got)
	}
	// They empty it again: an empty sub-table sets nothing, and one added
	// since goes with Parley's table.
	b = strings.Replace(installed, "model = \"o3\"", "model = \"o4\"", 1) + "\n[mcp_servers.parley.tools]\n"
	if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	mustUninstall(t, env, Codex, User)
	want := strings.Replace(orig, "o3", "o4", 1)
	if got := string(mustRead(t, p)); got != want {
		t.Errorf("after uninstall:\n%q\nwant\n%q", got, want)
	}
}

// clientWritesAt makes the client write path (edit of its text) the first
// time Apply is about to replace or remove it: after Parley's copy and its
// new text are on disk, before the rename.
func clientWritesAt(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	done := false
	beforeReplace = func(p string) {
		if p != path || done {
			return
		}
		done = true
		b, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			return
		}
		if err := os.WriteFile(p, edit(b), 0o600); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { beforeReplace = nil })
}

// clientEdit is a write of the client's: a key at the top of the file.
func clientEdit(key string) func([]byte) []byte {
	return func(b []byte) []byte {
		return bytes.Replace(b, []byte("{"), []byte("{\n  \""+key+"\": 1,"), 1)
	}
}

var startups = clientEdit("clientWrote")

func TestInstallKeepsAWriteMadeJustBeforeTheRename(t *testing.T) {
	env := testEnv(t)
	realistic(t, env, Claude)
	path := filepath.Join(env.Home, ".claude.json")
	orig := mustRead(t, path)
	clientWritesAt(t, path, startups)
	p, err := Install(env, opts(Claude, User))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(); !errors.Is(err, ErrRaced) {
		t.Fatalf("apply: %v, want ErrRaced", err)
	}
	if got := mustRead(t, path); !bytes.Equal(got, startups(orig)) {
		t.Fatalf("the client's write is lost:\n%s", got)
	}
	if _, err := os.Stat(recordPath(env, Claude, User)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a record of an install that did not happen: %v", err)
	}

	// Run plans again from the client's text: both are there.
	clientWritesAt(t, path, clientEdit("clientWroteAgain"))
	if _, err := Run(func() (*Plan, error) { return Install(env, opts(Claude, User)) }); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, path)
	if !bytes.Contains(got, []byte(`"clientWrote": 1`)) || !bytes.Contains(got, []byte(`"clientWroteAgain": 1`)) {
		t.Errorf("the client's writes are not both kept:\n%s", got)
	}
	checkEntries(t, env, opts(Claude, User))
}

func TestInstallPutsBackTheFilesItWroteWhenALaterOneRaced(t *testing.T) {
	for _, alsoFirst := range []bool{false, true} {
		env := testEnv(t)
		realistic(t, env, Claude)
		first := filepath.Join(env.Home, ".claude.json")
		second := filepath.Join(env.Home, ".claude", "settings.json")
		orig := snapshot(t, env.Home)
		var firstWrite []byte
		clientWritesAt(t, second, func(b []byte) []byte {
			if alsoFirst {
				// The client rewrites the file Parley has just written, too.
				firstWrite = startups(mustRead(t, first))
				if err := os.WriteFile(first, firstWrite, 0o600); err != nil {
					t.Error(err)
				}
			}
			return startups(b)
		})
		p, err := Install(env, opts(Claude, User))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Changes) != 2 || p.Changes[0].Path != first {
			t.Fatalf("changes: %v", p.Changes)
		}
		if err := p.Apply(); !errors.Is(err, ErrRaced) {
			t.Fatalf("apply: %v, want ErrRaced", err)
		}
		if got := mustRead(t, second); string(got) != string(startups([]byte(orig[second]))) {
			t.Errorf("%s: the client's write is lost:\n%s", second, got)
		}
		want := orig[first]
		if alsoFirst {
			want = string(firstWrite)
		}
		if got := mustRead(t, first); string(got) != want {
			t.Errorf("client wrote the first file too %v: %s is\n%s\nwant\n%s", alsoFirst, first, got, want)
		}
		// The record, written before the renames, is put back: none, but
		// for a file the Apply could not put back (the client wrote it
		// after Parley), whose entries it keeps for the uninstall.
		beforeReplace = nil
		rec, err := loadRecord(recordPath(env, Claude, User))
		if err != nil {
			t.Fatal(err)
		}
		if !alsoFirst {
			if rec != nil {
				t.Errorf("a record of an install that did not happen: %+v", rec)
			}
			continue
		}
		if rec == nil || len(rec.Files) != 1 || rec.Files[0].Path != first {
			t.Fatalf("the record does not name %s alone, which keeps Parley's entries: %+v", first, rec)
		}
		mustUninstall(t, env, Claude, User)
		if got, want := string(mustRead(t, first)), string(startups([]byte(orig[first]))); got != want {
			t.Errorf("%s after the uninstall:\n%s\nwant\n%s", first, got, want)
		}
	}
}

func TestUninstallKeepsAFileTheClientWroteBeforeItsRemoval(t *testing.T) {
	env := testEnv(t)
	mustInstall(t, env, opts(Gemini, User)) // Parley creates settings.json
	path := filepath.Join(env.Home, ".gemini", "settings.json")
	p, err := Uninstall(env, Gemini, User)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || !p.Changes[0].Delete {
		t.Fatalf("changes: %+v", p.Changes)
	}
	installed := mustRead(t, path)
	clientWritesAt(t, path, startups)
	if err := p.Apply(); !errors.Is(err, ErrRaced) {
		t.Fatalf("apply: %v, want ErrRaced", err)
	}
	if got := mustRead(t, path); !bytes.Equal(got, startups(installed)) {
		t.Errorf("after the race:\n%s", got)
	}
}

func TestUninstallKeepsTheRecordOfFilesItDidNotLookAt(t *testing.T) {
	env := testEnv(t)
	other := env
	other.ClaudeConfigDir = filepath.Join(env.Home, "cc")
	path := filepath.Join(other.ClaudeConfigDir, ".claude.json")
	// The user's own parley entry, which the install replaces.
	orig := "{\n  \"mcpServers\": {\n    \"parley\": {\"command\": \"parley\", \"args\": [\"mcp\"]}\n  }\n}\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	mustInstall(t, other, opts(Claude, User))
	installed := mustRead(t, path)

	// Uninstall without CLAUDE_CONFIG_DIR: it finds nothing, and says the
	// record names other files.
	u := mustUninstall(t, env, Claude, User)
	if u.Changed() || len(u.Remaining) != 2 || !strings.Contains(strings.Join(u.Notes, "\n"), path) {
		t.Fatalf("uninstall elsewhere: changes %v, remaining %v, notes %q", u.Changes, u.Remaining, u.Notes)
	}
	if _, err := os.Stat(recordPath(env, Claude, User)); err != nil {
		t.Fatalf("the record is gone: %v", err)
	}
	if !bytes.Equal(mustRead(t, path), installed) {
		t.Fatal("the uninstall changed a file it did not look at")
	}
	// An install without CLAUDE_CONFIG_DIR keeps the record of them too.
	mustInstall(t, env, opts(Claude, User))
	mustUninstall(t, env, Claude, User)

	// With CLAUDE_CONFIG_DIR the user's entry comes back, and the record goes.
	mustUninstall(t, other, Claude, User)
	if got := string(mustRead(t, path)); got != orig {
		t.Errorf("after uninstall:\n%s\nwant\n%s", got, orig)
	}
	if _, err := os.Stat(recordPath(env, Claude, User)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the record is still there: %v", err)
	}
}

// writeFile writes a file of the user's, with its folders.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendText adds text at the end of a file: the user's edit after
// install, so that uninstall cannot restore the original copy.
func appendText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, append(mustRead(t, path), text...), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestUninstallPutsBackTheUsersHookInstallReplaced(t *testing.T) {
	cases := []struct {
		name   string
		client Client
		rel    string
		orig   string
		check  func(b []byte) bool // after install
		narrow []string            // a later install's hooks, which puts it back
	}{
		{"claude-own-group", Claude, ".claude/settings.json",
			`{"hooks":{"PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"parley hook claude PostToolUse","timeout":5}]}]}}`,
			func(b []byte) bool { return !bytes.Contains(b, []byte(`"Bash"`)) }, []string{"Stop"}},
		{"gemini-mixed-group", Gemini, ".gemini/settings.json",
			"{\n  // mine\n  \"hooks\": {\"AfterTool\": [{\"matcher\": \"write_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"npx prettier\"}, {\"name\": \"mine\", \"type\": \"command\", \"command\": \"parley hook gemini AfterTool\"}]}]}\n}\n",
			func(b []byte) bool {
				return bytes.Contains(b, []byte("npx prettier")) && !bytes.Contains(b, []byte(`"mine"`)) && bytes.Contains(b, []byte(`"write_file"`))
			}, []string{}},
	}
	for _, tc := range cases {
		for _, how := range []string{"uninstall", "narrower install", "narrower then wider install"} {
			t.Run(tc.name+"-"+how, func(t *testing.T) {
				env := testEnv(t)
				path := filepath.Join(env.Home, tc.rel)
				writeFile(t, path, tc.orig)
				mustInstall(t, env, opts(tc.client, User))
				if b := mustRead(t, path); !tc.check(b) {
					t.Fatalf("after install:\n%s", b)
				}
				appendText(t, path, "\n")
				if how != "uninstall" {
					o := opts(tc.client, User)
					o.Hooks = tc.narrow
					mustInstall(t, env, o)
				}
				if how == "narrower then wider install" {
					mustInstall(t, env, opts(tc.client, User))
					if b := mustRead(t, path); !tc.check(b) {
						t.Fatalf("after the wider install:\n%s", b)
					}
				}
				mustUninstall(t, env, tc.client, User)
				if got := string(mustRead(t, path)); got != tc.orig+"\n" {
					t.Errorf("after %s:\n%s\nwant\n%s\n", how, got, tc.orig+"\n")
				}
			})
		}
	}
}

func TestUninstallPutsBackTheUsersHooksIntoAGroupTheyAddedTo(t *testing.T) {
	env := testEnv(t)
	path := filepath.Join(env.Home, ".claude", "settings.json")
	writeFile(t, path, `{"hooks":{"PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"parley hook claude PostToolUse","timeout":5}]}]}}`)
	mustInstall(t, env, opts(Claude, User))
	// The user adds a hook of theirs to the group Parley's replaced.
	b := mustRead(t, path)
	at := bytes.Index(b, []byte(`"timeout": 10`))
	if at < 0 {
		t.Fatalf("after install:\n%s", b)
	}
	at += bytes.IndexByte(b[at:], '}') + 1
	edited := string(b[:at]) + `, {"type": "command", "command": "npx lint"}` + string(b[at:])
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	mustUninstall(t, env, Claude, User)
	got := mustRead(t, path)
	v := decodeAny(t, path, got).(map[string]any)
	g := v["hooks"].(map[string]any)["PostToolUse"].([]any)[0].(map[string]any)
	hs := g["hooks"].([]any)
	if len(hs) != 2 || hs[0].(map[string]any)["command"] != "parley hook claude PostToolUse" || hs[0].(map[string]any)["timeout"] != 5.0 ||
		hs[1].(map[string]any)["command"] != "npx lint" {
		t.Errorf("after uninstall:\n%s", got)
	}
}

// A link to a file that is not there is refused, in a dry run too: Parley
// never creates a file through a link (the git guard's rule too). Once the
// file is there, it is written through, and the links stay.
func TestInstallRefusesALinkToAMissingFile(t *testing.T) {
	env := testEnv(t)
	path := filepath.Join(env.Home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Join(env.Home, "dotfiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// settings.json -> gemini.json (a link too) -> ../dotfiles/gemini.json,
	// which does not exist yet.
	mid := filepath.Join(env.Home, ".gemini", "gemini.json")
	if err := os.Symlink("gemini.json", path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "dotfiles", "gemini.json"), mid); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(env.Home, "dotfiles", "gemini.json")
	links := func(when string) {
		t.Helper()
		for p, want := range map[string]string{path: "gemini.json", mid: filepath.Join("..", "dotfiles", "gemini.json")} {
			if got, err := os.Readlink(p); err != nil || got != want {
				t.Fatalf("%s: %s is no longer the link: %q %v", when, p, got, err)
			}
		}
	}
	_, err := Install(env, opts(Gemini, User))
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "does not create a file through a link") {
		t.Fatalf("install through a link to nothing: %v", err)
	}
	links("after the refused install")
	if _, err := os.Stat(env.ParleyHome); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the refused install wrote into Parley's home: %v", err)
	}
	if _, err := os.Lstat(real); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s was made: %v", real, err)
	}

	// The user makes the file (empty): it is written through, and comes
	// back as it was.
	if err := os.WriteFile(real, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustInstall(t, env, opts(Gemini, User))
	links("after install")
	if b := mustRead(t, real); !bytes.Contains(b, []byte(testBin)) {
		t.Fatalf("%s after install:\n%s", real, b)
	}
	checkEntries(t, env, opts(Gemini, User))
	mustUninstall(t, env, Gemini, User)
	links("after uninstall")
	if b, err := os.ReadFile(real); err != nil || len(b) != 0 {
		t.Errorf("after uninstall: %q %v", b, err)
	}
}

func TestInstallRefusesALinkItCannotWriteThrough(t *testing.T) {
	for _, to := range []string{"loop.json", filepath.Join("missing-folder", "x.json")} {
		env := testEnv(t)
		path := filepath.Join(env.Home, ".gemini", "settings.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, path); err != nil {
			t.Fatal(err)
		}
		loop := filepath.Join(env.Home, ".gemini", "loop.json")
		if err := os.Symlink("settings.json", loop); err != nil {
			t.Fatal(err)
		}
		_, err := Install(env, opts(Gemini, User))
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("link to %s: err = %v", to, err)
		}
		if got, err := os.Readlink(path); err != nil || got != to {
			t.Errorf("link to %s: the link is now %q %v", to, got, err)
		}
	}
}

func TestInstallRefusesAServerEntryThatIsTheUsers(t *testing.T) {
	cases := []struct {
		name   string
		client Client
		rel    string
		text   string
		line   int
		why    string
	}{
		{"claude-node", Claude, ".claude.json", "{\n  \"mcpServers\": {\n    \"parley\": {\"command\": \"node\", \"args\": [\"my.js\"]}\n  }\n}\n", 3, "it runs node my.js"},
		{"claude-env", Claude, ".claude.json", "{\n  \"mcpServers\": {\n    \"parley\": {\"command\": \"parley\", \"args\": [\"mcp\"], \"env\": {\"FOO\": \"1\"}}\n  }\n}\n", 3, "it also sets env"},
		{"gemini-comment", Gemini, ".gemini/settings.json", "{\n  \"mcpServers\": {\n    \"parley\": {\n      // mine\n      \"command\": \"parley\", \"args\": [\"mcp\"]\n    }\n  }\n}\n", 3, "comments"},
		{"opencode-string", OpenCode, ".config/opencode/opencode.json", "{\n  \"mcp\": {\"parley\": \"off\"}\n}\n", 2, "not an object"},
		{"codex-node", Codex, ".codex/config.toml", "model = \"o3\"\n\n[mcp_servers.parley]\ncommand = \"node\"\n", 3, "it runs node"},
		{"codex-env", Codex, ".codex/config.toml", "[mcp_servers.parley]\ncommand = \"parley\"\nargs = [\"mcp\"]\nenv = { FOO = \"1\" }\n", 1, "it also sets env"},
		{"codex-enabled-comment", Codex, ".codex/config.toml", "[mcp_servers.parley]\n# mine, switched off\ncommand = \"parley\"\nargs = [\"mcp\"]\nenabled = false\n", 1, "it also sets enabled"},
		{"codex-env-subtable", Codex, ".codex/config.toml", "[mcp_servers.parley]\ncommand = \"parley\"\nargs = [\"mcp\"]\n\n[mcp_servers.parley.env]\nFOO = \"1\"\n", 1, "it also sets env"},
		{"codex-env-subtable-first", Codex, ".codex/config.toml", "[mcp_servers.parley.env]\nFOO = \"1\"\n\n[mcp_servers.parley]\ncommand = \"parley\"\nargs = [\"mcp\"]\n", 4, "it also sets env"},
		{"codex-env-subtable-alone", Codex, ".codex/config.toml", "model = \"o3\"\n\n[mcp_servers.parley.env]\nFOO = \"1\"\n", 3, "it names no parley program"},
		{"codex-subtable-comment", Codex, ".codex/config.toml", "[mcp_servers.parley]\ncommand = \"parley\"\nargs = [\"mcp\"]\n[mcp_servers.parley.env] # mine\n", 1, "comments"},
		{"codex-comment", Codex, ".codex/config.toml", "[mcp_servers.parley]\ncommand = \"parley\" # mine\nargs = ['mcp']\n", 1, "comments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t)
			p := filepath.Join(env.Home, tc.rel)
			writeFile(t, p, tc.text)
			before := snapshot(t, env.Home)
			_, err := Install(env, opts(tc.client, User))
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || ce.Path != p || ce.Line != tc.line {
				t.Fatalf("err = %v, want a conflict in %s at line %d", err, p, tc.line)
			}
			for _, want := range []string{"line ", tc.why, "not an entry Parley wrote", "rename it or remove it"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the message lacks %q: %v", want, err)
				}
			}
			// Uninstall (no record) leaves it, and says so.
			u := mustUninstall(t, env, tc.client, User)
			if !strings.Contains(strings.Join(u.Notes, "\n"), "left alone") {
				t.Errorf("uninstall notes: %q", u.Notes)
			}
			sameSnapshot(t, before, snapshot(t, env.Home))
		})
	}
}

func TestInstallReplacesAnEntryOfClaudeMCPAdd(t *testing.T) {
	// What `claude mcp add parley -- parley mcp` writes holds nothing
	// Parley would not: install replaces it, uninstall puts it back.
	env := testEnv(t)
	p := filepath.Join(env.Home, ".claude.json")
	orig := "{\n  \"mcpServers\": {\n    \"parley\": {\n      \"type\": \"stdio\",\n      \"command\": \"parley\",\n      \"args\": [\n        \"mcp\"\n      ],\n      \"env\": {}\n    }\n  }\n}\n"
	writeFile(t, p, orig)
	mustInstall(t, env, opts(Claude, User))
	checkEntries(t, env, opts(Claude, User))
	appendText(t, p, "\n")
	mustUninstall(t, env, Claude, User)
	if got := string(mustRead(t, p)); got != orig+"\n" {
		t.Errorf("after uninstall:\n%s", got)
	}
}

func TestUninstallLeavesParleysTableTheUserAddedTo(t *testing.T) {
	env := testEnv(t)
	realistic(t, env, Codex)
	mustInstall(t, env, opts(Codex, User))
	p := filepath.Join(env.Home, ".codex", "config.toml")
	b := string(mustRead(t, p))
	if !strings.HasSuffix(b, "tool_timeout_sec = 120\n") {
		t.Fatalf("Parley's table is not last:\n%s", b)
	}
	edited := b + "env = { FOO = \"1\" }\n"
	if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	u := mustUninstall(t, env, Codex, User)
	if !strings.Contains(strings.Join(u.Notes, "\n"), "it also sets env") {
		t.Errorf("notes: %q", u.Notes)
	}
	got := string(mustRead(t, p))
	if !strings.Contains(got, "[mcp_servers.parley]\ncommand = ") || !strings.Contains(got, "env = { FOO = \"1\" }") || strings.Contains(got, "notify = [\""+testBin) {
		t.Errorf("after uninstall:\n%s", got)
	}
}

func TestInstallKeepsNumbersAsWritten(t *testing.T) {
	for _, c := range []Client{Claude, Gemini, OpenCode} {
		t.Run(string(c), func(t *testing.T) {
			env := testEnv(t)
			ts, err := targets(env, opts(c, User))
			if err != nil {
				t.Fatal(err)
			}
			p := ts[0].path
			orig := "{\n  \"inf\": 1e400,\n  \"big\": 123456789012345678901234567890,\n  \"third\": 0.30000000000000000001,\n  \"mcpServers\": {}\n}\n"
			writeFile(t, p, orig)
			mustInstall(t, env, opts(c, User))
			b := mustRead(t, p)
			for _, n := range []string{"1e400", "123456789012345678901234567890", "0.30000000000000000001"} {
				if !bytes.Contains(b, []byte(": "+n+",")) {
					t.Errorf("%s is not kept as written:\n%s", n, b)
				}
			}
			if !bytes.Contains(b, []byte(`"parley": {`)) || !bytes.Contains(b, []byte(testBin)) {
				t.Errorf("no server entry:\n%s", b)
			}
			appendText(t, p, "\n")
			mustUninstall(t, env, c, User)
			if got := string(mustRead(t, p)); got != orig+"\n" {
				t.Errorf("after uninstall:\n%s", got)
			}
		})
	}
}

func TestInstallRefusesABadNumberWithItsLine(t *testing.T) {
	for _, c := range []Client{Claude, Gemini} {
		env := testEnv(t)
		ts, err := targets(env, opts(c, User))
		if err != nil {
			t.Fatal(err)
		}
		p := ts[0].path
		writeFile(t, p, "{\n  \"a\": 1,\n  \"b\": 01\n}\n")
		_, err = Install(env, opts(c, User))
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) || ce.Path != p || ce.Line != 3 || strings.Contains(err.Error(), "trailing comma") {
			t.Errorf("%s: err = %v, want invalid JSON at %s line 3", c, err, p)
		}
	}
}

func TestUninstallCodexConfigWithoutALastNewline(t *testing.T) {
	origs := []string{"# my config", "model = \"o3\"", "model = \"o3\"\n\n[tui]\nx = 1", "# my config\n"}
	edits := map[string]func(string) string{
		"appended table":   func(s string) string { return s + "\n[mcp_servers.extra]\ncommand = \"extra\"\n" },
		"prepended line":   func(s string) string { return "# edited\n" + s },
		"appended comment": func(s string) string { return s + "# more\n" },
	}
	for _, orig := range origs {
		for name, edit := range edits {
			env := testEnv(t)
			p := filepath.Join(env.Home, ".codex", "config.toml")
			writeFile(t, p, orig)
			mustInstall(t, env, opts(Codex, User))
			installed := string(mustRead(t, p))
			writeFile(t, p, edit(installed))
			mustUninstall(t, env, Codex, User)
			got := string(mustRead(t, p))
			want := edit(orig)
			if name == "appended comment" && !strings.HasSuffix(orig, "\n") {
				want = orig + "\n# more\n" // the newline keeps the comment a line of its own
			}
			if got != want {
				t.Errorf("%q, %s: after uninstall\n%q\nwant\n%q", orig, name, got, want)
			}
		}
	}
}

func TestEmptyContainersOfTheUsersAreTheirs(t *testing.T) {
	for _, c := range []Client{Claude, Codex, Gemini} {
		t.Run(string(c), func(t *testing.T) {
			env := testEnv(t)
			ts, err := targets(env, opts(c, User))
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range ts {
				text := "{\n  \"mcpServers\": {},\n  \"hooks\": {\"Stop\": []}\n}\n"
				if tg.format == fmtTOML {
					text = "model = \"o3\"\n\n[mcp_servers]\n"
				}
				writeFile(t, tg.path, text)
				if !isClean(tg, c, nil, []byte(text)) {
					t.Errorf("%s: empty containers count as Parley's", tg.path)
				}
			}
			orig := snapshot(t, env.Home)
			mustInstall(t, env, opts(c, User))
			u := mustUninstall(t, env, c, User)
			for _, ch := range u.Changes {
				if !ch.Restore {
					t.Errorf("%s was not restored from its copy", ch.Path)
				}
			}
			sameSnapshot(t, orig, snapshot(t, env.Home))
		})
	}
}

// An uninstall run with another Parley home than the install's finds no
// record; when Parley's entries name the home that holds it, it changes
// nothing and says which uninstall puts the files back.
func TestUninstallWithAnotherHomeNamesTheInstallsHome(t *testing.T) {
	for _, c := range Clients {
		for _, named := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s-named-%v", c, named), func(t *testing.T) {
				env := testEnv(t)
				o := opts(c, User)
				if named {
					o.Args = []string{"--home", env.ParleyHome}
				} else {
					// The default home, which the entries do not name.
					env.ParleyHome = filepath.Join(env.Home, ".parley")
				}
				empty := snapshot(t, env.Home)
				mustInstall(t, env, o)
				installed := snapshot(t, env.Home)

				other := env
				other.ParleyHome = filepath.Join(t.TempDir(), "other-home")
				_, err := Uninstall(other, c, User)
				if !errors.Is(err, ErrOtherHome) || !strings.Contains(err.Error(), "parley --home "+env.ParleyHome+" uninstall "+string(c)) {
					t.Fatalf("uninstall with another home: %v", err)
				}
				sameSnapshot(t, installed, snapshot(t, env.Home))

				mustUninstall(t, env, c, User)
				if named {
					sameSnapshot(t, empty, snapshot(t, env.Home))
				} else {
					// The home's own folder, with no record left in it.
					if err := os.RemoveAll(env.ParleyHome); err != nil {
						t.Fatal(err)
					}
					sameSnapshot(t, empty, snapshot(t, env.Home))
				}
			})
		}
	}
}

// pastedCommand returns the words of the command an error says to run
// (between "run `" and "`"), as a shell splits them.
func pastedCommand(t *testing.T, err error) []string {
	t.Helper()
	_, after, ok := strings.Cut(err.Error(), "run `")
	cmd, _, ok2 := strings.Cut(after, "`")
	if !ok || !ok2 {
		t.Fatalf("no command to run in: %v", err)
	}
	return splitCommand(cmd)
}

// The uninstall an ErrOtherHome refusal of a project's uninstall names
// acts on that project (--dir), not on whatever folder it is pasted in.
func TestOtherHomeRefusalNamesTheProjectFolder(t *testing.T) {
	env := testEnv(t)
	env.ParleyHome = filepath.Join(env.Home, ".parley") // the default home: project entries name none
	mustInstall(t, env, opts(Gemini, Project))
	other := env
	other.ParleyHome = filepath.Join(t.TempDir(), "other")
	_, err := Uninstall(other, Gemini, Project)
	if !errors.Is(err, ErrOtherHome) {
		t.Fatalf("%v", err)
	}
	want := []string{"parley", "--home", env.ParleyHome, "uninstall", "gemini", "--project", "--dir", env.ProjectDir}
	if got := pastedCommand(t, err); !slices.Equal(got, want) {
		t.Errorf("the command given is %q, want %q: %v", got, want, err)
	}
}

// The home in the command an ErrOtherHome refusal names is shell-quoted:
// pasted, it names that home, whatever its characters.
func TestOtherHomeRefusalQuotesTheHome(t *testing.T) {
	env := testEnv(t)
	env.ParleyHome = filepath.Join(env.Home, "it's my home; $x")
	o := opts(Gemini, User)
	o.Args = []string{"--home", env.ParleyHome}
	mustInstall(t, env, o)
	other := env
	other.ParleyHome = filepath.Join(t.TempDir(), "other")
	_, err := Uninstall(other, Gemini, User)
	if !errors.Is(err, ErrOtherHome) {
		t.Fatalf("%v", err)
	}
	want := []string{"parley", "--home", env.ParleyHome, "uninstall", "gemini"}
	if got := pastedCommand(t, err); !slices.Equal(got, want) {
		t.Errorf("the command given is %q, want %q: %v", got, want, err)
	}
}

// A config file with another name (a hard link: a dotfiles copy) is
// refused by install and uninstall when applied (a replace would give this
// name a new file and leave the other with the old text); nothing is
// written.
func TestInstallRefusesAHardLinkedFile(t *testing.T) {
	env := testEnv(t)
	path := filepath.Join(env.Home, ".gemini", "settings.json")
	orig := "{\n  \"ui\": {}\n}\n"
	writeFile(t, path, orig)
	dot := filepath.Join(env.Home, "dotfiles", "gemini.json")
	if err := os.MkdirAll(filepath.Dir(dot), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, dot); err != nil {
		t.Fatal(err)
	}
	_, err := Run(func() (*Plan, error) { return Install(env, opts(Gemini, User)) })
	if !errors.Is(err, ErrHardLinked) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("install into a hard-linked file: %v", err)
	}
	if _, err := os.Stat(env.ParleyHome); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused install wrote into Parley's home: %v", err)
	}
	for _, p := range []string{path, dot} {
		if got := string(mustRead(t, p)); got != orig {
			t.Fatalf("%s changed: %q", p, got)
		}
	}

	// Installed before the link was made: uninstall refuses too.
	if err := os.Remove(dot); err != nil {
		t.Fatal(err)
	}
	mustInstall(t, env, opts(Gemini, User))
	installed := string(mustRead(t, path))
	if err := os.Link(path, dot); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(func() (*Plan, error) { return Uninstall(env, Gemini, User) }); !errors.Is(err, ErrHardLinked) {
		t.Fatalf("uninstall of a hard-linked file: %v", err)
	}
	if _, err := os.Stat(recordPath(env, Gemini, User)); err != nil {
		t.Fatalf("the refused uninstall took the record: %v", err)
	}
	for _, p := range []string{path, dot} {
		if got := string(mustRead(t, p)); got != installed {
			t.Fatalf("%s changed: %q", p, got)
		}
	}
}

// A hard link made after the plan's look and before the rename (another
// program linking the file at that moment) stops the write: the names are
// not parted, and the file keeps its text.
func TestApplyRefusesAHardLinkMadeWhileItWrites(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Home, ".gemini", "settings.json")
	writeFile(t, p, "{}\n")
	other := filepath.Join(env.Home, "dotfiles.json")
	beforeReplace = func(string) {
		if err := os.Link(p, other); err != nil {
			t.Error(err)
		}
	}
	defer func() { beforeReplace = nil }()
	pl, err := Install(env, opts(Gemini, User))
	if err != nil {
		t.Fatal(err)
	}
	if err := pl.Apply(); !errors.Is(err, ErrHardLinked) {
		t.Fatalf("apply over a hard link made meanwhile: %v", err)
	}
	for _, f := range []string{p, other} {
		if got := string(mustRead(t, f)); got != "{}\n" {
			t.Errorf("%s holds %q", f, got)
		}
	}
	if _, err := os.Stat(recordPath(env, Gemini, User)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a record of an install that did not happen: %v", err)
	}
}

// The hard-link refusal's advice works: the plan (what --dry-run prints)
// is made, with the changes to apply by hand and a note that applying it
// is refused; only Apply refuses, and it says to use --dry-run.
func TestDryRunShowsTheChangesToAHardLinkedFile(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Home, ".gemini", "settings.json")
	writeFile(t, p, "{}\n")
	if err := os.Link(p, filepath.Join(env.Home, "copy.json")); err != nil {
		t.Fatal(err)
	}
	pl, err := Install(env, opts(Gemini, User)) // what --dry-run runs
	if err != nil {
		t.Fatalf("the dry run the refusal points to is refused too: %v", err)
	}
	if len(pl.Changes) != 1 || !strings.Contains(pl.Diff(), "+  \"mcpServers\"") {
		t.Fatalf("the dry run shows no change to make by hand: %q", pl.Diff())
	}
	if !slices.ContainsFunc(pl.Notes, func(n string) bool {
		return strings.Contains(n, p) && strings.Contains(n, "hard link") && strings.Contains(n, "refused")
	}) {
		t.Fatalf("the dry run does not say applying it is refused: %q", pl.Notes)
	}
	if err := pl.Apply(); !errors.Is(err, ErrHardLinked) || !strings.Contains(err.Error(), "--dry-run") {
		t.Fatalf("apply: %v", err)
	}
	if got := string(mustRead(t, p)); got != "{}\n" {
		t.Fatalf("the refused apply wrote %q", got)
	}
}

// A project's config folder that is a symbolic link out of the project (a
// repository can track .gemini -> ../elsewhere), or to nothing, is refused
// in the plan: no file is created, or written, where the link leads. A
// link inside the project is followed, and so is your own config folder's
// link (~/.gemini -> dotfiles).
func TestInstallRefusesAProjectConfigFolderLinkedOutOfTheProject(t *testing.T) {
	for _, c := range []struct {
		name string
		file bool // a settings.json is there already
	}{{"new file", false}, {"existing file", true}} {
		t.Run(c.name, func(t *testing.T) {
			env := testEnv(t)
			outside := t.TempDir()
			if c.file {
				writeFile(t, filepath.Join(outside, "settings.json"), "{}\n")
			}
			if err := os.Symlink(outside, filepath.Join(env.ProjectDir, ".gemini")); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, outside)
			_, err := Run(func() (*Plan, error) { return Install(env, opts(Gemini, Project)) })
			if err == nil || !strings.Contains(err.Error(), "outside the project folder") {
				t.Fatalf("install through a folder link out of the project: %v", err)
			}
			sameSnapshot(t, before, snapshot(t, outside))
		})
	}

	t.Run("link to nothing", func(t *testing.T) {
		env := testEnv(t)
		gone := filepath.Join(t.TempDir(), "gone")
		if err := os.Symlink(gone, filepath.Join(env.ProjectDir, ".gemini")); err != nil {
			t.Fatal(err)
		}
		if _, err := Install(env, opts(Gemini, Project)); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("install through a folder link to nothing: %v", err)
		}
		if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("made where the link leads: %v", err)
		}
	})

	t.Run("link inside the project", func(t *testing.T) {
		env := testEnv(t)
		if err := os.MkdirAll(filepath.Join(env.ProjectDir, "config", "gemini"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("config", "gemini"), filepath.Join(env.ProjectDir, ".gemini")); err != nil {
			t.Fatal(err)
		}
		mustInstall(t, env, opts(Gemini, Project))
		mustRead(t, filepath.Join(env.ProjectDir, "config", "gemini", "settings.json"))
	})

	t.Run("your own folder, a link", func(t *testing.T) {
		env := testEnv(t)
		dot := filepath.Join(t.TempDir(), "dotfiles", "gemini")
		if err := os.MkdirAll(dot, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(dot, filepath.Join(env.Home, ".gemini")); err != nil {
			t.Fatal(err)
		}
		mustInstall(t, env, opts(Gemini, User))
		mustRead(t, filepath.Join(dot, "settings.json"))
	})
}

// A project's config file that is a symbolic link out of the project (a
// repository can track .mcp.json -> ~/.claude.json) is refused in the
// plan, as its folder would be: the file the link leads to is not written,
// and the advice is to remove the link.
// A file link that stays inside the project is followed.
func TestInstallRefusesAProjectConfigFileLinkedOutOfTheProject(t *testing.T) {
	for _, c := range []struct {
		client Client
		rel    string
		text   string
	}{
		{Claude, ".mcp.json", "{}\n"},
		{Claude, filepath.Join(".claude", "settings.json"), "{}\n"},
		{Codex, filepath.Join(".codex", "config.toml"), "model = \"o3\"\n"},
		{Codex, filepath.Join(".codex", "hooks.json"), "{}\n"},
		{Gemini, filepath.Join(".gemini", "settings.json"), "{}\n"},
		{OpenCode, "opencode.json", "{}\n"},
	} {
		t.Run(string(c.client)+"/"+c.rel, func(t *testing.T) {
			env := testEnv(t)
			outside := filepath.Join(t.TempDir(), "elsewhere")
			writeFile(t, outside, c.text)
			link := filepath.Join(env.ProjectDir, c.rel)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, filepath.Dir(outside))
			_, err := Run(func() (*Plan, error) { return Install(env, opts(c.client, Project)) })
			if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "outside the project folder") {
				t.Fatalf("install through a file link out of the project: %v", err)
			}
			// The advice: take the link out, not copy the file it leads to
			// (the user's own config, maybe) into the project.
			if msg := err.Error(); !strings.Contains(msg, "remove the link from the project") || !strings.Contains(msg, "without --project") || strings.Contains(msg, "put a copy") {
				t.Fatalf("the refusal's advice: %v", err)
			}
			sameSnapshot(t, before, snapshot(t, filepath.Dir(outside)))
			if got, err := os.Readlink(link); err != nil || got != outside {
				t.Fatalf("the link is now %q %v", got, err)
			}
		})
	}

	t.Run("link inside the project", func(t *testing.T) {
		env := testEnv(t)
		real := filepath.Join(env.ProjectDir, "config", "mcp.json")
		writeFile(t, real, "{}\n")
		if err := os.Symlink(filepath.Join("config", "mcp.json"), filepath.Join(env.ProjectDir, ".mcp.json")); err != nil {
			t.Fatal(err)
		}
		mustInstall(t, env, opts(Claude, Project))
		if b := mustRead(t, real); !bytes.Contains(b, []byte("mcpServers")) {
			t.Fatalf("%s after install:\n%s", real, b)
		}
	})
}

// A link is followed where the system follows it: a ".." in its target
// steps out of the folder a link before it led to, not out of the folder
// the link's text names (.mcp.json -> s/../../home/.claude.json, with s ->
// a/b in the project, is the project's own home/.claude.json, not the
// user's ~/.claude.json beside the project). So a project's file linked
// that way leads to nothing and is refused, or, with a file there (a
// repository can track one), that file in the project is read and
// written; the user's file is never touched. In your own config the file
// read is the file written.
func TestInstallFollowsALinkAsTheSystemDoes(t *testing.T) {
	for _, c := range []struct {
		client Client
		rel    string
		text   string
	}{
		{Claude, ".mcp.json", "{\"numStartups\": 7, \"oauthAccount\": {\"email\": \"me@example.com\"}}\n"},
		{Claude, filepath.Join(".claude", "settings.json"), "{\"model\": \"opus\"}\n"},
		{Codex, filepath.Join(".codex", "config.toml"), "model = \"o3\"\n"},
		{Codex, filepath.Join(".codex", "hooks.json"), "{}\n"},
		{Gemini, filepath.Join(".gemini", "settings.json"), "{\"theme\": \"dark\"}\n"},
		{OpenCode, "opencode.json", "{\"theme\": \"dark\"}\n"},
	} {
		for _, decoy := range []bool{false, true} {
			name := string(c.client) + "/" + c.rel + "/nothing there"
			if decoy {
				name = string(c.client) + "/" + c.rel + "/a file there"
			}
			t.Run(name, func(t *testing.T) {
				env := testEnv(t)
				// The user's file, where a lexical reading of the link leads.
				user := filepath.Join(env.Home, "victim"+filepath.Ext(c.rel))
				writeFile(t, user, c.text)
				if err := os.MkdirAll(filepath.Join(env.ProjectDir, "a", "b"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join("a", "b"), filepath.Join(env.ProjectDir, "s")); err != nil {
					t.Fatal(err)
				}
				link := filepath.Join(env.ProjectDir, c.rel)
				if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
					t.Fatal(err)
				}
				up := strings.Repeat("../", strings.Count(c.rel, string(filepath.Separator)))
				to := up + "s/../../home/" + filepath.Base(user)
				if err := os.Symlink(to, link); err != nil {
					t.Fatal(err)
				}
				inProject := filepath.Join(env.ProjectDir, "home", filepath.Base(user))
				if decoy {
					writeFile(t, inProject, c.text)
				}
				before := snapshot(t, env.Home)
				_, err := Run(func() (*Plan, error) { return Install(env, opts(c.client, Project)) })
				sameSnapshot(t, before, snapshot(t, env.Home))
				if got, err := os.Readlink(link); err != nil || got != to {
					t.Fatalf("the link is now %q %v", got, err)
				}
				if !decoy {
					if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "does not exist") {
						t.Fatalf("install through a link to nothing: %v", err)
					}
					if _, err := os.Lstat(inProject); !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("made where the link leads: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("install through a link to a file in the project: %v", err)
				}
				if b := mustRead(t, inProject); !bytes.Contains(b, []byte("parley")) {
					t.Fatalf("%s after install:\n%s", inProject, b)
				}
			})
		}
	}

	t.Run("your own config", func(t *testing.T) {
		env := testEnv(t)
		// ~/.gemini/settings.json -> s/../gemini.json, s -> ../dotfiles/sub:
		// the system reads ~/dotfiles/gemini.json.
		dir := filepath.Join(env.Home, ".gemini")
		if err := os.MkdirAll(filepath.Join(env.Home, "dotfiles", "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "dotfiles", "sub"), filepath.Join(dir, "s")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("s/../gemini.json", filepath.Join(dir, "settings.json")); err != nil {
			t.Fatal(err)
		}
		real := filepath.Join(env.Home, "dotfiles", "gemini.json")
		other := filepath.Join(dir, "gemini.json")
		writeFile(t, real, "{\"theme\": \"dark\"}\n")
		writeFile(t, other, "{\"theme\": \"light\"}\n")
		mustInstall(t, env, opts(Gemini, User))
		if b := mustRead(t, real); !bytes.Contains(b, []byte(testBin)) || !bytes.Contains(b, []byte("dark")) {
			t.Fatalf("%s after install:\n%s", real, b)
		}
		if got := string(mustRead(t, other)); got != "{\"theme\": \"light\"}\n" {
			t.Fatalf("%s, which the link does not lead to, now holds:\n%s", other, got)
		}
		mustUninstall(t, env, Gemini, User)
		if got := string(mustRead(t, real)); got != "{\"theme\": \"dark\"}\n" {
			t.Fatalf("%s after uninstall:\n%s", real, got)
		}
	})
}

// The plan's look at a project's links is made again when the file is
// written: a link changed in between to lead out of the project (to a
// file holding the same text, which the check of the file's text does not
// tell apart) is refused, and nothing out of the project is written.
func TestApplyChecksAProjectsLinksAgain(t *testing.T) {
	t.Run("file link", func(t *testing.T) {
		env := testEnv(t)
		inside := filepath.Join(env.ProjectDir, "config", "mcp.json")
		writeFile(t, inside, "{}\n")
		link := filepath.Join(env.ProjectDir, ".mcp.json")
		if err := os.Symlink(filepath.Join("config", "mcp.json"), link); err != nil {
			t.Fatal(err)
		}
		outside := filepath.Join(t.TempDir(), "claude.json")
		writeFile(t, outside, "{}\n")
		p, err := Install(env, opts(Claude, Project))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, filepath.Dir(outside))
		if err := p.Apply(); err == nil || !strings.Contains(err.Error(), "outside the project folder") {
			t.Fatalf("apply through a link changed to lead out of the project: %v", err)
		}
		sameSnapshot(t, before, snapshot(t, filepath.Dir(outside)))
	})

	t.Run("folder link", func(t *testing.T) {
		env := testEnv(t)
		outside := t.TempDir()
		p, err := Install(env, opts(Gemini, Project))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(env.ProjectDir, ".gemini")); err != nil {
			t.Fatal(err)
		}
		if err := p.Apply(); err == nil || !strings.Contains(err.Error(), "outside the project folder") {
			t.Fatalf("apply through a folder link made to lead out of the project: %v", err)
		}
		if ents, err := os.ReadDir(outside); err != nil || len(ents) != 0 {
			t.Fatalf("written out of the project: %v %v", ents, err)
		}
	})
}
