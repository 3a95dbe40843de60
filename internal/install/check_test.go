package install

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeBinary writes an executable called parley and returns its path.
func fakeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bin", "parley")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func levels(fs []Finding) map[Level][]string {
	out := map[Level][]string{}
	for _, f := range fs {
		out[f.Level] = append(out[f.Level], f.Msg)
	}
	return out
}

func hasFinding(fs []Finding, level Level, substr string) bool {
	for _, f := range fs {
		if f.Level == level && strings.Contains(f.Msg, substr) {
			return true
		}
	}
	return false
}

func TestCheckHealthyAndBroken(t *testing.T) {
	for _, c := range Clients {
		t.Run(string(c), func(t *testing.T) {
			env := testEnv(t)
			realistic(t, env, c)
			if installed, fs := Check(env, c, User, HookEvents[c]); installed || len(fs) > 0 {
				t.Fatalf("not installed yet, but: %v %v", installed, fs)
			}
			bin := fakeBinary(t)
			o := opts(c, User)
			o.Command = bin
			mustInstall(t, env, o)
			installed, fs := Check(env, c, User, HookEvents[c])
			if !installed || len(levels(fs)[Fail]) > 0 || len(levels(fs)[Warn]) > 0 || len(levels(fs)[OK]) != 1 {
				t.Fatalf("after install: %v %v", installed, fs)
			}

			// The binary goes away.
			if err := os.Remove(bin); err != nil {
				t.Fatal(err)
			}
			_, fs = Check(env, c, User, HookEvents[c])
			if !hasFinding(fs, Fail, "does not exist") {
				t.Errorf("binary gone: %v", fs)
			}
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}

			// The server entry (or the whole file) goes away.
			ts, _ := targets(env, o)
			first := ts[0].path
			orig := mustRead(t, first)
			_ = os.Remove(first)
			_, fs = Check(env, c, User, HookEvents[c])
			if !hasFinding(fs, Fail, "is missing") {
				t.Errorf("file gone: %v", fs)
			}
			// The file goes bad.
			if err := os.WriteFile(first, append([]byte("{\n"), orig...), 0o644); err != nil {
				t.Fatal(err)
			}
			if c == Codex {
				if err := os.WriteFile(first, append([]byte("[[x]\n"), orig...), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, fs = Check(env, c, User, HookEvents[c])
			if !hasFinding(fs, Fail, "line ") || !hasFinding(fs, Fail, "correct the file by hand") {
				t.Errorf("file invalid: %v, want where and what to do", fs)
			}
			if err := os.WriteFile(first, orig, 0o644); err != nil {
				t.Fatal(err)
			}

			// A hook goes away.
			if len(HookEvents[c]) > 0 {
				last := ts[len(ts)-1].path
				b := mustRead(t, last)
				ev := HookEvents[c][0]
				cut := strings.Replace(string(b), "hook "+string(c)+" "+ev, "hook "+string(c)+" Other", 1)
				if err := os.WriteFile(last, []byte(cut), 0o644); err != nil {
					t.Fatal(err)
				}
				_, fs = Check(env, c, User, HookEvents[c])
				if !hasFinding(fs, Fail, "the "+ev+" hook is gone") {
					t.Errorf("hook gone: %v", fs)
				}
			}
		})
	}
}

func TestCheckExtraSteps(t *testing.T) {
	env := testEnv(t)
	bin := fakeBinary(t)
	// Codex: hooks off, project not trusted.
	if err := os.MkdirAll(filepath.Join(env.Home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env.Home, ".codex", "config.toml"), []byte("[features]\nhooks = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts(Codex, Project)
	o.Command = bin
	mustInstall(t, env, o)
	_, fs := Check(env, Codex, Project, HookEvents[Codex])
	if !hasFinding(fs, Warn, "hooks = false") || !hasFinding(fs, Warn, "trusted project") {
		t.Errorf("codex: %v", fs)
	}
	// An older install without the hooks this parley has.
	o.Hooks = nil
	o.Scope = User
	mustInstall(t, env, o)
	_, fs = Check(env, Codex, User, HookEvents[Codex])
	if !hasFinding(fs, Warn, "run `parley install codex` again") {
		t.Errorf("codex without hooks: %v", fs)
	}

	// Gemini: hooks off, folder trust on and the project not trusted.
	if err := os.MkdirAll(filepath.Join(env.Home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := "{\n  // mine\n  \"hooksConfig\": {\"enabled\": false},\n  \"security\": {\"folderTrust\": {\"enabled\": true}}\n}\n"
	if err := os.WriteFile(filepath.Join(env.Home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	g := opts(Gemini, Project)
	g.Command = bin
	mustInstall(t, env, g)
	_, fs = Check(env, Gemini, Project, HookEvents[Gemini])
	if !hasFinding(fs, Warn, "hooksConfig.enabled = false") || !hasFinding(fs, Warn, "trusted folder") {
		t.Errorf("gemini: %v", fs)
	}
	trust := `{"` + filepath.Dir(env.ProjectDir) + `": "TRUST_FOLDER"}`
	if err := os.WriteFile(filepath.Join(env.Home, ".gemini", "trustedFolders.json"), []byte(trust), 0o644); err != nil {
		t.Fatal(err)
	}
	_, fs = Check(env, Gemini, Project, HookEvents[Gemini])
	if hasFinding(fs, Warn, "trusted folder") {
		t.Errorf("gemini trusted: %v", fs)
	}

	// A bare command must be on PATH.
	p := opts(OpenCode, Project)
	mustInstall(t, env, p)
	_, fs = Check(env, OpenCode, Project, nil)
	if !hasFinding(fs, Fail, "not on PATH") {
		t.Errorf("opencode without parley on PATH: %v", fs)
	}
	env.Path = filepath.Dir(bin)
	_, fs = Check(env, OpenCode, Project, nil)
	if len(levels(fs)[Fail]) > 0 {
		t.Errorf("opencode with parley on PATH: %v", fs)
	}
}

// An install from before the Stop hook had a timeout: doctor says Claude
// Code ends the waiter early, and a new install adds the timeout (only it).
// Codex reads notify only from the user's config: a project install leaves
// it out and says how to add it, and doctor does not ask for it there.
// Gemini CLI's folder trust is on unless the user's settings turn it off
// (0.61.0 reads a missing security.folderTrust.enabled as true), and in an
// untrusted folder it starts none of the MCP servers and hooks, the user
// settings' ones included.
func TestCheckGeminiFolderTrustIsOnByDefault(t *testing.T) {
	env := testEnv(t)
	bin := fakeBinary(t)
	g := opts(Gemini, Project)
	g.Command = bin
	mustInstall(t, env, g)
	_, fs := Check(env, Gemini, Project, HookEvents[Gemini])
	if !hasFinding(fs, Warn, "trusted folder") {
		t.Errorf("project, no user settings: %v", fs)
	}
	u := opts(Gemini, User)
	u.Command = bin
	plan := mustInstall(t, env, u)
	if !strings.Contains(strings.Join(plan.Notes, "\n"), "only in a folder you trusted") {
		t.Errorf("user install notes: %q", plan.Notes)
	}
	_, fs = Check(env, Gemini, User, HookEvents[Gemini])
	if !hasFinding(fs, Note, "only in a folder you trusted") || hasFinding(fs, Warn, "trusted") {
		t.Errorf("user: %v", fs)
	}

	// Turned off in the user's settings: nothing to trust.
	p := filepath.Join(env.Home, ".gemini", "settings.json")
	off := strings.Replace(string(mustRead(t, p)), "{", "{\n  \"security\": {\"folderTrust\": {\"enabled\": false}},", 1)
	if err := os.WriteFile(p, []byte(off), 0o600); err != nil {
		t.Fatal(err)
	}
	_, fs = Check(env, Gemini, Project, HookEvents[Gemini])
	if hasFinding(fs, Warn, "trusted folder") {
		t.Errorf("project, folder trust off: %v", fs)
	}
	_, fs = Check(env, Gemini, User, HookEvents[Gemini])
	if hasFinding(fs, Note, "trusted") {
		t.Errorf("user, folder trust off: %v", fs)
	}
}

func TestStopTimeoutAndProjectNotify(t *testing.T) {
	env := testEnv(t)
	realistic(t, env, Claude)
	o := opts(Claude, User)
	o.Command = fakeBinary(t)
	mustInstall(t, env, o)
	settings := filepath.Join(env.Home, ".claude", "settings.json")
	installed := mustRead(t, settings)
	field := fmt.Sprintf(`"timeout": %d`, ClaudeStopTimeout)
	if !bytes.Contains(installed, []byte(field)) {
		t.Fatalf("no Stop timeout:\n%s", installed)
	}
	old := regexp.MustCompile(`,\s*`+field).ReplaceAll(installed, nil)
	if bytes.Equal(old, installed) {
		t.Fatalf("could not take the timeout out of:\n%s", installed)
	}
	if err := os.WriteFile(settings, old, 0o644); err != nil {
		t.Fatal(err)
	}
	_, fs := Check(env, Claude, User, HookEvents[Claude])
	if !hasFinding(fs, Warn, "ends the waiter early") {
		t.Errorf("Stop hook without a timeout: %v", fs)
	}
	p := mustInstall(t, env, o)
	if len(p.Changes) != 1 || !bytes.Equal(mustRead(t, settings), installed) {
		t.Errorf("re-install: %s\n%s", p.Diff(), mustRead(t, settings))
	}
	if _, fs = Check(env, Claude, User, HookEvents[Claude]); len(levels(fs)[Warn]) > 0 {
		t.Errorf("after re-install: %v", fs)
	}
	// Claude Code's switch that turns every hook off is a warning.
	off := bytes.Replace(installed, []byte("{"), []byte("{\n  \"disableAllHooks\": true,"), 1)
	if err := os.WriteFile(settings, off, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, fs = Check(env, Claude, User, HookEvents[Claude]); !hasFinding(fs, Warn, "disableAllHooks") {
		t.Errorf("hooks switched off: %v", fs)
	}
	if err := os.WriteFile(settings, installed, 0o644); err != nil {
		t.Fatal(err)
	}

	c := opts(Codex, Project)
	c.Command = fakeBinary(t)
	p = mustInstall(t, env, c)
	if !strings.Contains(strings.Join(p.Notes, "\n"), "parley install codex --user") {
		t.Errorf("notes: %v", p.Notes)
	}
	if b := mustRead(t, filepath.Join(env.ProjectDir, ".codex", "config.toml")); bytes.Contains(b, []byte("notify")) {
		t.Errorf("notify in the project's config:\n%s", b)
	}
	if _, fs = Check(env, Codex, Project, HookEvents[Codex]); hasFinding(fs, Warn, "notify") || hasFinding(fs, Fail, "notify") {
		t.Errorf("doctor asks for notify in a project: %v", fs)
	}
}

func TestCheckAnInstallMadeWithAnotherConfigDir(t *testing.T) {
	env := testEnv(t)
	other := env
	other.CodexHome = filepath.Join(env.Home, "cx")
	o := opts(Codex, User)
	o.Command = fakeBinary(t)
	mustInstall(t, other, o)
	if _, fs := Check(other, Codex, User, HookEvents[Codex]); len(levels(fs)[Fail]) > 0 || len(levels(fs)[OK]) != 1 {
		t.Fatalf("with the install's CODEX_HOME: %v", fs)
	}

	// Without it, the files are missing, and the advice is to check as the
	// install ran, not to install again (which would make a second install).
	_, fs := Check(env, Codex, User, HookEvents[Codex])
	if !hasFinding(fs, Fail, "is missing") {
		t.Fatalf("without CODEX_HOME: %v", fs)
	}
	first := true
	for _, f := range fs {
		if f.Level != Fail {
			continue
		}
		want := []string{"another CODEX_HOME"}
		if first {
			// Said once in full; the next ones refer to it.
			want = append(want, filepath.Join(other.CodexHome, "config.toml"), "would make a second install")
			first = false
		}
		for _, w := range want {
			if !strings.Contains(f.Msg, w) {
				t.Errorf("%q lacks %q", f.Msg, w)
			}
		}
		if strings.Contains(f.Msg, "run `parley install codex` again") {
			t.Errorf("%q advises a second install", f.Msg)
		}
	}

	// Installed in both: the default one is intact, and the other is named.
	mustInstall(t, env, o)
	_, fs = Check(env, Codex, User, HookEvents[Codex])
	if len(levels(fs)[Fail]) > 0 || len(levels(fs)[OK]) != 1 || !hasFinding(fs, Note, filepath.Join(other.CodexHome, "config.toml")) {
		t.Errorf("installed in both: %v", fs)
	}
}

// Installed with another CODEX_HOME and with the default one (one record
// names both), then Parley's table goes from the default file: the record
// names that file, so installing again is the repair, and doctor says so
// (not that it would make a second install); the other file is named.
func TestCheckAdvisesInstallingAgainWhenTheRecordNamesThisFileToo(t *testing.T) {
	env := testEnv(t)
	other := env
	other.CodexHome = filepath.Join(env.Home, "cx")
	o := opts(Codex, User)
	o.Command = fakeBinary(t)
	mustInstall(t, other, o)
	mustInstall(t, env, o)
	p := filepath.Join(env.Home, ".codex", "config.toml")
	b := string(mustRead(t, p))
	if err := os.WriteFile(p, []byte(b[:strings.Index(b, "[mcp_servers.parley]")]), 0o644); err != nil {
		t.Fatal(err)
	}
	_, fs := Check(env, Codex, User, HookEvents[Codex])
	for _, f := range fs {
		if strings.Contains(f.Msg, "would make a second install") || f.Level == Fail && strings.Contains(f.Msg, "another CODEX_HOME") {
			t.Errorf("the record names %s too, yet doctor says installing here makes a second install: %q", p, f.Msg)
		}
	}
	if !hasFinding(fs, Fail, "mcp_servers.parley is gone: run `parley install codex` again") {
		t.Errorf("no advice to install again: %v", fs)
	}
	if !hasFinding(fs, Note, filepath.Join(other.CodexHome, "config.toml")) {
		t.Errorf("the other file the record names is not named: %v", fs)
	}
}

// An install made only with another CODEX_HOME, by a parley with fewer
// hooks: one report gives one piece of advice, to check (and install) as
// the install ran, never to run the install here that it warns against.
func TestCheckAdviceAgreesWhenTheInstallIsElsewhere(t *testing.T) {
	env := testEnv(t)
	other := env
	other.CodexHome = filepath.Join(env.Home, "cx")
	o := opts(Codex, User)
	o.Command = fakeBinary(t)
	o.Hooks = []string{"SessionStart", "Stop", "notify"} // an older parley's
	mustInstall(t, other, o)
	_, fs := Check(env, Codex, User, HookEvents[Codex])
	for _, f := range fs {
		if strings.Contains(f.Msg, "run `parley install codex` again") {
			t.Errorf("advises the second install it warns against: %q", f.Msg)
		}
	}
	if !hasFinding(fs, Fail, "would make a second install") {
		t.Errorf("no warning against a second install: %v", fs)
	}
	if !hasFinding(fs, Warn, "install again with CODEX_HOME set as the install had it") {
		t.Errorf("the hooks this parley adds are not named with how to add them: %v", fs)
	}
}
