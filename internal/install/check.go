package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Level says how much a finding matters.
type Level string

// Levels, from fine to broken. Only Fail makes `parley doctor` exit non-zero.
const (
	OK   Level = "ok"
	Note Level = "note" // something to know or do that Parley cannot check
	Warn Level = "warn" // works, but not fully (a hook that will not run)
	Fail Level = "fail" // broken
)

// Finding is one line of a check.
type Finding struct {
	Client Client `json:"client,omitempty"`
	Scope  Scope  `json:"scope,omitempty"`
	Path   string `json:"path,omitempty"`
	Level  Level  `json:"level"`
	Msg    string `json:"message"`
}

func (f Finding) String() string {
	where := ""
	if f.Client != "" {
		where = fmt.Sprintf("%s (%s): ", f.Client, f.Scope)
	}
	return where + f.Msg
}

// Check looks at Parley's install for client in scope: the files are there
// and valid, Parley's entries are intact and point at a program that
// exists, and the client's extra steps are done. installed is false (and
// there are no findings) when neither the files nor Parley's record know of
// an install there. implemented lists the hook events this parley has
// commands for (a missing one is worth a re-install).
func Check(env Env, client Client, scope Scope, implemented []string) (installed bool, findings []Finding) {
	add := func(level Level, path, format string, a ...any) {
		findings = append(findings, Finding{Client: client, Scope: scope, Path: path, Level: level, Msg: fmt.Sprintf(format, a...)})
	}
	given := env // the project folder as given, to find a record named by it
	env = projectEnv(env, scope)
	ts, err := targets(env, Options{Client: client, Scope: scope, Command: "parley", Hooks: HookEvents[client]})
	if err != nil {
		return false, nil
	}
	rec, recErr := loadRecord(recordPath(given, client, scope))
	if scope == Project {
		rec.rebase(env.ProjectDir)
	}
	var k known
	if rec != nil {
		k = known{rec.Command}
	}
	// Entries that run parley with another home than the one checked
	// here are that home's install: checking them against this home's
	// record and node would check the wrong one. They are named, with the
	// doctor that checks them; with no entry of this home's, that is all.
	mine, others := entryHomes(env, client, scope, ts, k, rec != nil)
	var elsewhereHomes []Finding
	for _, h := range others {
		elsewhereHomes = append(elsewhereHomes, Finding{Client: client, Scope: scope, Path: h.files[0], Level: Warn,
			Msg: fmt.Sprintf("Parley's entries in %s run parley with the home %s, not the home this doctor checks (%s): `parley --home %s doctor` checks them and that home's node",
				strings.Join(h.files, ", "), h.home, env.ParleyHome, shellQuote(h.home))})
	}
	if len(others) > 0 && !mine {
		return true, elsewhereHomes
	}
	defer func() {
		if installed {
			findings = append(findings, elsewhereHomes...)
		}
	}()
	type state struct {
		t       target
		exists  bool
		err     error
		server  any // the entry, when there is one
		hooks   map[string]string
		notify  any
		decoded any
		// stopTimeout is the timeout of Claude Code's Stop hook (0: none).
		stopTimeout float64
	}
	var states []state
	found := false
	for _, t := range ts {
		s := state{t: t, hooks: map[string]string{}}
		b, exists, err := readFile(t.path)
		s.exists = exists
		if err != nil || !exists {
			s.err = err
			states = append(states, s)
			continue
		}
		if t.format == fmtTOML {
			m, err := decodeTOML(b)
			if err != nil {
				s.err = withPath(err, t.path)
				states = append(states, s)
				continue
			}
			s.decoded = m
			if tv, ok := tableValue(m, t.server); ok {
				s.server = map[string]any{"command": tv["command"], "args": tv["args"]}
			}
			s.notify = m["notify"]
		} else {
			_, text := splitBOM(b)
			if _, err := checkJSON(text, t.dialect); err != nil {
				s.err = withPath(err, t.path)
				states = append(states, s)
				continue
			}
			v, _ := standardValue(b)
			s.decoded = v
			m, _ := v.(map[string]any)
			if t.server != nil {
				if parent, ok := dig(m, t.server[:len(t.server)-1]); ok {
					s.server = parent[t.server[len(t.server)-1]]
				}
			}
			eachHook(m, func(ev string, hm map[string]any, cmd string) {
				if e, ok := k.hookEvent(cmd, client); ok && e == ev {
					s.hooks[ev] = cmd
					if client == Claude && ev == "Stop" {
						if n, ok := hm["timeout"].(json.Number); ok {
							s.stopTimeout, _ = n.Float64()
						}
					}
				}
			})
		}
		if k.server(s.server) || len(s.hooks) > 0 || k.notify(s.notify) {
			found = true
		}
		states = append(states, s)
	}
	if !found && rec == nil {
		return false, nil
	}
	if recErr != nil {
		add(Fail, "", "%v", recErr)
	}
	var wantHooks []string
	if rec != nil {
		wantHooks = rec.Hooks
	} else {
		for _, s := range states {
			for ev := range s.hooks {
				wantHooks = append(wantHooks, ev)
			}
			if k.notify(s.notify) {
				wantHooks = append(wantHooks, "notify")
			}
		}
	}
	again := "parley install " + string(client)
	if scope == Project {
		again += " --project"
	}
	// What to do about an entry or a file that is not there: install again,
	// unless the record names only files this check does not look at. Then
	// the install was likely made with another CODEX_HOME (or the like), and
	// installing again would make a second one here. When the record names
	// files here too, the install covered them, and installing again is the
	// repair.
	fix := fmt.Sprintf("run `%s` again", again)
	addHooks := fmt.Sprintf("run `%s` again to add them", again)
	var elsewhere []string
	here := false
	if rec != nil {
		for _, f := range rec.Files {
			if slices.ContainsFunc(ts, func(t target) bool { return t.path == f.Path }) {
				here = true
			} else {
				elsewhere = append(elsewhere, f.Path)
			}
		}
	}
	onlyElsewhere := len(elsewhere) > 0 && !here
	if onlyElsewhere {
		fix = fmt.Sprintf("the record of Parley's install names %s, which this check did not look at: was the install made with another %s? Run `parley doctor` with it set as the install had it (`%s` here would make a second install)",
			strings.Join(elsewhere, ", "), configEnvVar(client), again)
		addHooks = fmt.Sprintf("to add them, install again with %s set as the install had it (the record names %s)", configEnvVar(client), strings.Join(elsewhere, ", "))
	}
	usedFix := false
	fixed := func(format string, a ...any) string {
		msg := fmt.Sprintf(format, a...) + ": " + fix
		if usedFix && onlyElsewhere {
			msg = fmt.Sprintf(format, a...) + ": see above (another " + configEnvVar(client) + "?)"
		}
		usedFix = true
		return msg
	}
	// What to do about the program an entry runs: install again, which
	// writes this program's full path, except where a project's shared
	// files name parley without a path, for everyone who works in it.
	programFault := func(prog, format string, a ...any) string {
		if scope == Project && prog != "" && !strings.Contains(prog, "/") {
			return fmt.Sprintf(format, a...) + ": put parley on PATH (this project's shared files run it by name)"
		}
		return fixed(format, a...)
	}
	bad := len(findings)
	for _, s := range states {
		t := s.t
		expectsHooks := false
		for ev := range t.hooks {
			if slices.Contains(wantHooks, ev) {
				expectsHooks = true
			}
		}
		switch {
		case s.err != nil && errors.Is(s.err, ErrInvalid):
			// What to do: the file is the user's; Parley changes none
			// it cannot read whole.
			add(Fail, t.path, "%v: correct the file by hand at that place (parley changes no file it cannot read whole), then run `parley doctor` again", s.err)
			continue
		case s.err != nil:
			add(Fail, t.path, "%v", s.err)
			continue
		case !s.exists && (t.server != nil || expectsHooks):
			add(Fail, t.path, "%s", fixed("%s is missing", t.path))
			continue
		case !s.exists:
			continue
		}
		if t.server != nil {
			name := strings.Join(t.server, ".")
			switch {
			case s.server == nil:
				add(Fail, t.path, "%s", fixed("%s: %s is gone", t.path, name))
			case !k.server(s.server):
				add(Fail, t.path, "%s: %s no longer starts `parley mcp`", t.path, name)
			default:
				prog := serverCommand(s.server)
				if msg := checkProgram(prog, env.Path); msg != "" {
					add(Fail, t.path, "%s", programFault(prog, "%s: %s %s", t.path, name, msg))
				}
				if m, _ := s.server.(map[string]any); m["enabled"] == false {
					add(Warn, t.path, "%s: %s is switched off (\"enabled\": false)", t.path, name)
				}
			}
		}
		for _, ev := range HookEvents[client] {
			if _, ok := t.hooks[ev]; !ok || !slices.Contains(wantHooks, ev) {
				continue
			}
			cmd, ok := s.hooks[ev]
			if !ok {
				add(Fail, t.path, "%s", fixed("%s: the %s hook is gone", t.path, ev))
				continue
			}
			prog := splitCommand(cmd)[0]
			if msg := checkProgram(prog, env.Path); msg != "" {
				add(Fail, t.path, "%s", programFault(prog, "%s: the %s hook %s", t.path, ev, msg))
			}
			if client == Claude && ev == "Stop" && s.stopTimeout < ClaudeStopTimeout {
				add(Warn, t.path, "%s: the Stop hook's timeout is under %d s, so Claude Code ends the waiter early: run `%s` again", t.path, ClaudeStopTimeout, again)
			}
		}
		if m, _ := s.decoded.(map[string]any); client == Claude && len(t.hooks) > 0 && m["disableAllHooks"] == true {
			// Claude Code's own switch: no hook of any settings file runs.
			add(Warn, t.path, "%s: \"disableAllHooks\": true, so Claude Code runs none of Parley's hooks (an idle session is not woken, nothing rides on tool results)", t.path)
		}
		if t.format == fmtTOML && slices.Contains(wantHooks, "notify") {
			switch {
			case s.notify == nil:
				add(Fail, t.path, "%s", fixed("%s: notify is gone", t.path))
			case !k.notify(s.notify):
				add(Warn, t.path, "%s: notify runs another program, so Codex tells Parley it is idle only through hooks", t.path)
			default:
				a, _ := s.notify.([]any)
				p, _ := a[0].(string)
				if msg := checkProgram(p, env.Path); msg != "" {
					add(Fail, t.path, "%s", programFault(p, "%s: notify %s", t.path, msg))
				}
			}
		}
	}
	var missing []string
	for _, ev := range implemented {
		if client == Codex && scope == Project && ev == "notify" {
			continue // Codex reads notify only from the user's config
		}
		if slices.Contains(HookEvents[client], ev) && !slices.Contains(wantHooks, ev) {
			missing = append(missing, ev)
		}
	}
	if len(missing) > 0 {
		add(Warn, "", "this parley also has the hook(s) %s for %s: %s", strings.Join(missing, ", "), client, addHooks)
	}
	if len(elsewhere) > 0 && !(onlyElsewhere && usedFix) {
		add(Note, "", "the record of Parley's install also names %s, which this check did not look at (an install made with another %s?)", strings.Join(elsewhere, ", "), configEnvVar(client))
	}
	findings = append(findings, extraSteps(env, client, scope, wantHooks, states[0].decoded)...)
	if len(findings) == bad || onlyNotes(findings[bad:]) {
		var paths []string
		for _, s := range states {
			if s.exists {
				paths = append(paths, s.t.path)
			}
		}
		findings = append(findings[:bad:bad], append([]Finding{{Client: client, Scope: scope, Level: OK,
			Msg: "Parley's entries are intact in " + strings.Join(paths, ", ")}}, findings[bad:]...)...)
	}
	return true, findings
}

// otherHome is a home other than the checked one that Parley's entries in
// files run parley with.
type otherHome struct {
	home  string
	files []string
}

// entryHomes reads the homes Parley's entries in the scope's files run
// parley with (--home DIR; in your own config, an entry naming none runs
// with ~/.parley, as install writes none for it, unless the checked home
// records the install (recorded); a project's shared files name none, and
// their parley finds its home through the client's PARLEY_HOME, so they are
// not counted). mine reports an entry of the
// checked home (env.ParleyHome); others are the other homes, in the order
// found. An entry counts as Parley's by its program (named parley, or the
// one the checked home's record names: k) or, for a program of another
// name, when the record in the home it names names its program.
func entryHomes(env Env, client Client, scope Scope, ts []target, k known, recorded bool) (mine bool, others []otherHome) {
	for _, t := range ts {
		b, ok, err := readFile(t.path)
		if err != nil || !ok {
			continue
		}
		for _, argv := range parleyEntries(t, client, b) {
			home := namedHome(argv[1:], "")
			if home == "" && scope == User {
				home = namedHome(nil, env.Home)
				if recorded {
					home = env.ParleyHome // the install this home records named none
				}
			}
			if home == "" {
				continue
			}
			if sameFolder(home, env.ParleyHome) {
				if k.program(argv[0]) {
					mine = true
				}
				continue
			}
			if !isParleyBinary(argv[0]) {
				other := env
				other.ParleyHome = home
				if rec, err := loadRecord(recordPath(other, client, scope)); err != nil || rec == nil || rec.Command != argv[0] {
					continue
				}
			}
			i := slices.IndexFunc(others, func(o otherHome) bool { return o.home == home })
			if i < 0 {
				others = append(others, otherHome{home: home})
				i = len(others) - 1
			}
			if !slices.Contains(others[i].files, t.path) {
				others[i].files = append(others[i].files, t.path)
			}
		}
	}
	return mine, others
}

func onlyNotes(fs []Finding) bool {
	for _, f := range fs {
		if f.Level != Note {
			return false
		}
	}
	return true
}

// checkProgram returns what is wrong with the program a client will run,
// or "".
func checkProgram(prog, path string) string {
	if prog == "" {
		return "names no program"
	}
	if !strings.Contains(prog, "/") {
		for _, dir := range filepath.SplitList(path) {
			if dir == "" {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, prog)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return ""
			}
		}
		return fmt.Sprintf("runs %q, which is not on PATH", prog)
	}
	if strings.HasPrefix(prog, "~") {
		return fmt.Sprintf("runs %q; write the full path", prog)
	}
	fi, err := os.Stat(prog)
	switch {
	case err != nil:
		return fmt.Sprintf("points at %s, which does not exist", prog)
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return fmt.Sprintf("points at %s, which is not a program", prog)
	}
	return ""
}

// extraSteps checks (or, when it cannot, names) what a client needs beyond
// its config entries.
func extraSteps(env Env, client Client, scope Scope, hooks []string, decoded any) []Finding {
	var out []Finding
	add := func(level Level, path, format string, a ...any) {
		out = append(out, Finding{Client: client, Scope: scope, Path: path, Level: level, Msg: fmt.Sprintf(format, a...)})
	}
	switch client {
	case Claude:
		add(Note, "", "pushes into an idle session need Claude Code started with --dangerously-load-development-channels server:parley")
	case Codex:
		user := filepath.Join(codexHome(env), "config.toml")
		files := []string{user}
		// The project's config is checked apart from the user's only
		// when it is another file: the same one twice said each warning
		// twice.
		if p := filepath.Join(env.ProjectDir, ".codex", "config.toml"); scope == Project && resolvePath(p) != resolvePath(user) {
			files = append(files, p)
		}
		hasHooks := slices.ContainsFunc(hooks, func(h string) bool { return h != "notify" })
		for _, f := range files {
			b, ok, _ := readFile(f)
			if !ok {
				continue
			}
			m, err := decodeTOML(b)
			if err != nil {
				continue
			}
			if feat, ok := m["features"].(map[string]any); ok && hasHooks {
				for _, k := range []string{"hooks", "codex_hooks"} {
					if v, ok := feat[k].(bool); ok && !v {
						add(Warn, f, "%s sets [features] %s = false: Codex runs none of Parley's hooks", f, k)
					}
				}
			}
			if f == user && scope == Project {
				proj, _ := m["projects"].(map[string]any)
				p, _ := proj[env.ProjectDir].(map[string]any)
				if p["trust_level"] != "trusted" {
					add(Warn, f, "Codex reads %s only in a trusted project: trust it when Codex asks", filepath.Join(env.ProjectDir, ".codex"))
				}
			}
		}
		if hasHooks {
			add(Note, "", "Codex runs new hooks only after you trust them once (/hooks in Codex); Parley cannot see whether you did")
		}
	case Gemini:
		for _, f := range []string{filepath.Join(env.Home, ".gemini", "settings.json"), filepath.Join(env.ProjectDir, ".gemini", "settings.json")} {
			if f == filepath.Join(env.ProjectDir, ".gemini", "settings.json") && scope != Project {
				continue
			}
			b, ok, _ := readFile(f)
			if !ok {
				continue
			}
			v, err := standardValue(b)
			if err != nil {
				continue
			}
			m, _ := v.(map[string]any)
			hc, _ := m["hooksConfig"].(map[string]any)
			if hc["enabled"] == false && len(hooks) > 0 {
				add(Warn, f, "%s sets hooksConfig.enabled = false: Gemini CLI runs none of Parley's hooks", f)
			}
			if dis, ok := hc["disabled"].([]any); ok && slices.Contains(dis, any("parley")) {
				add(Warn, f, "%s lists the parley hook in hooksConfig.disabled", f)
			}
		}
		switch {
		case scope == Project && geminiFolderTrust(env) && !geminiTrusted(env):
			add(Warn, "", "Gemini CLI reads %s only in a trusted folder: trust it when Gemini asks (or with /permissions)", filepath.Join(env.ProjectDir, ".gemini", "settings.json"))
		case scope == User && geminiFolderTrust(env):
			add(Note, "", "Gemini CLI starts Parley's server and hooks, though they are in your own settings, only in a folder you trusted (it asks the first time it starts in one; `gemini mcp list` shows parley Disabled elsewhere)")
		}
	}
	return out
}

func codexHome(env Env) string {
	if env.CodexHome != "" {
		return env.CodexHome
	}
	return filepath.Join(env.Home, ".codex")
}

// geminiFolderTrust reports whether Gemini CLI's folder trust is on: it is
// unless the user's settings set security.folderTrust.enabled to false
// (Gemini CLI reads a missing value as true; 0.61.0 checked).
func geminiFolderTrust(env Env) bool {
	b, ok, _ := readFile(filepath.Join(env.Home, ".gemini", "settings.json"))
	if !ok {
		return true
	}
	v, err := standardValue(b)
	if err != nil {
		return true
	}
	m, _ := v.(map[string]any)
	sec, _ := m["security"].(map[string]any)
	ft, _ := sec["folderTrust"].(map[string]any)
	return ft["enabled"] != false
}

// geminiTrusted reports whether ~/.gemini/trustedFolders.json trusts the
// project folder (TRUST_FOLDER on it or above it, or TRUST_PARENT on a
// folder inside the one above it).
func geminiTrusted(env Env) bool {
	b, ok, _ := readFile(filepath.Join(env.Home, ".gemini", "trustedFolders.json"))
	if !ok {
		return false
	}
	var rules map[string]string
	std, err := standardValue(b)
	if err != nil {
		return false
	}
	raw, _ := json.Marshal(std)
	if json.Unmarshal(raw, &rules) != nil {
		return false
	}
	within := func(dir, root string) bool {
		rel, err := filepath.Rel(root, dir)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	trusted := false
	for p, rule := range rules {
		switch rule {
		case "TRUST_FOLDER":
			if within(env.ProjectDir, p) {
				trusted = true
			}
		case "TRUST_PARENT":
			if within(env.ProjectDir, filepath.Dir(p)) {
				trusted = true
			}
		case "DO_NOT_TRUST":
			if within(env.ProjectDir, p) {
				return false
			}
		}
	}
	return trusted
}
