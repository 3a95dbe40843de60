package install

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Client is an agent client Parley installs into.
type Client string

// The clients Parley knows.
const (
	Claude   Client = "claude"
	Codex    Client = "codex"
	Gemini   Client = "gemini"
	OpenCode Client = "opencode"
)

// Clients lists the clients in the order commands show them.
var Clients = []Client{Claude, Codex, Gemini, OpenCode}

// ParseClient checks a client name.
func ParseClient(s string) (Client, error) {
	c := Client(strings.ToLower(strings.TrimSpace(s)))
	switch c {
	case "claude-code":
		c = Claude
	case "gemini-cli":
		c = Gemini
	}
	if !slices.Contains(Clients, c) {
		return "", fmt.Errorf("%w %q (one of: claude, codex, gemini, opencode, git-guard)", ErrUnknownClient, s)
	}
	return c, nil
}

// Scope says whose config an install goes into.
type Scope string

const (
	// User is the user's own config: every session of the client sees it.
	User Scope = "user"
	// Project is the project folder's config (shared through the repository).
	Project Scope = "project"
)

// Env says where the clients keep their files. Tests set it; FromOS reads
// it from the process.
type Env struct {
	// Home is the user's home folder.
	Home string
	// ProjectDir is the project folder, for the project scope.
	ProjectDir string
	// CodexHome is $CODEX_HOME; empty means Home/.codex.
	CodexHome string
	// ClaudeConfigDir is $CLAUDE_CONFIG_DIR; empty means Claude Code's
	// defaults (~/.claude.json and ~/.claude/).
	ClaudeConfigDir string
	// XDGConfigHome is $XDG_CONFIG_HOME; empty means Home/.config.
	XDGConfigHome string
	// ParleyHome is Parley's home: the record of installs and the backups
	// of the original files live under ParleyHome/install.
	ParleyHome string
	// Path is $PATH, for finding a command written without a folder.
	Path string
}

// FromOS fills an Env from the process: the home folder, $CODEX_HOME,
// $CLAUDE_CONFIG_DIR, $XDG_CONFIG_HOME and $PATH. ProjectDir and ParleyHome
// are the caller's.
func FromOS(projectDir, parleyHome string) (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("install: cannot find your home folder: %w", err)
	}
	return Env{
		Home:            home,
		ProjectDir:      projectDir,
		CodexHome:       os.Getenv("CODEX_HOME"),
		ClaudeConfigDir: os.Getenv("CLAUDE_CONFIG_DIR"),
		XDGConfigHome:   os.Getenv("XDG_CONFIG_HOME"),
		ParleyHome:      parleyHome,
		Path:            os.Getenv("PATH"),
	}, nil
}

// ClaudeStopTimeout is the timeout, in seconds, of Claude Code's Stop hook
// (the asyncRewake waiter): 12 hours. `parley hook claude Stop` ends by
// itself a minute before.
const ClaudeStopTimeout = 12 * 60 * 60

// HookEvents lists, for each client, the hook events Parley can register
// (the `parley hook CLIENT EVENT` commands), in the client's own names.
// Codex's "notify" is its notify program, not a hook.
var HookEvents = map[Client][]string{
	Claude: {"SessionStart", "PostToolUse", "Stop"},
	Codex:  {"SessionStart", "PostToolUse", "Stop", "notify"},
	Gemini: {"AfterTool"},
}

// Options says what an install writes.
type Options struct {
	Client Client
	Scope  Scope
	// Command is how the client starts Parley: an absolute path to the
	// binary, or a name found on the client's PATH (the usual choice for a
	// project's shared files).
	Command string
	// Args go before every subcommand, for example --home DIR.
	Args []string
	// Hooks are the hook events to register, from HookEvents[Client]; the
	// others are left out (and taken out if an earlier install wrote them).
	Hooks []string
}

// format is how a config file is written.
type format int

const (
	fmtJSON format = iota
	fmtTOML
)

// target is one config file and what Parley keeps in it.
type target struct {
	path    string
	format  format
	dialect jsonDialect
	perm    os.FileMode // for a new file
	// server is the path of Parley's MCP server entry (JSON) or table (TOML).
	server      []string
	serverValue any      // jobj for JSON
	serverTOML  []tomlKV // for TOML
	// hooks are the hook groups to register, by event (JSON files only).
	hooks map[string]jobj
	// notify is Codex's top-level notify program (TOML only).
	notify []string
	// newFile is what a missing file starts as (JSON).
	newFile string
}

// mcpArgs are the arguments that start Parley's MCP server for a client.
func (o Options) mcpArgs(client string) []string {
	return append(slices.Clone(o.Args), "mcp", "--client", client)
}

// hookCommand is the shell command line of one hook.
func (o Options) hookCommand(event string) string {
	parts := append([]string{o.Command}, o.Args...)
	parts = append(parts, "hook", string(o.Client), event)
	q := make([]string, len(parts))
	for i, p := range parts {
		q[i] = shellQuote(p)
	}
	return strings.Join(q, " ")
}

func toAny(s []string) []any {
	a := make([]any, len(s))
	for i, x := range s {
		a[i] = x
	}
	return a
}

// wants reports whether the options register event.
func (o Options) wants(event string) bool { return slices.Contains(o.Hooks, event) }

// targets returns the files Parley writes for the options, and their
// content. A project scope whose files are the user's own config is no
// project (ErrHomeProject): the project folder is the home folder (a new
// terminal's working folder), or a client's project folder is where its
// user config is (CODEX_HOME is the project's .codex).
func targets(env Env, o Options) ([]target, error) {
	if o.Scope == Project && env.ProjectDir == "" {
		return nil, fmt.Errorf("install: no project folder")
	}
	ts, err := scopeTargets(env, o)
	if err != nil || o.Scope != Project {
		return ts, err
	}
	if env.Home != "" && resolvePath(env.ProjectDir) == resolvePath(env.Home) {
		return nil, fmt.Errorf("%w: %s holds your own config for %s, not a project's", ErrHomeProject, env.ProjectDir, o.Client)
	}
	uo := o
	uo.Scope = User
	uts, err := scopeTargets(env, uo)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		for _, u := range uts {
			if resolvePath(t.path) == resolvePath(u.path) {
				return nil, fmt.Errorf("%w: %s of the project %s is your own config for %s (%s), not a project's", ErrHomeProject, t.path, env.ProjectDir, o.Client, configEnvVar(o.Client))
			}
		}
	}
	return ts, nil
}

// resolvePath returns path with the symbolic links on the way resolved,
// as far as the path exists.
func resolvePath(path string) string {
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	dir := filepath.Dir(path)
	if dir == path {
		return path
	}
	return filepath.Join(resolvePath(dir), filepath.Base(path))
}

// scopeTargets is targets without the check that a project is one.
func scopeTargets(env Env, o Options) ([]target, error) {
	if env.Home == "" {
		return nil, fmt.Errorf("install: no home folder")
	}
	userPerm, projPerm := os.FileMode(0o600), os.FileMode(0o644)
	perm := userPerm
	if o.Scope == Project {
		perm = projPerm
	}
	switch o.Client {
	case Claude:
		var mcpFile, settings string
		switch {
		case o.Scope == Project:
			mcpFile = filepath.Join(env.ProjectDir, ".mcp.json")
			settings = filepath.Join(env.ProjectDir, ".claude", "settings.json")
		case env.ClaudeConfigDir != "":
			mcpFile = filepath.Join(env.ClaudeConfigDir, ".claude.json")
			settings = filepath.Join(env.ClaudeConfigDir, "settings.json")
		default:
			mcpFile = filepath.Join(env.Home, ".claude.json")
			settings = filepath.Join(env.Home, ".claude", "settings.json")
		}
		hooks := map[string]jobj{}
		for _, ev := range HookEvents[Claude] {
			if !o.wants(ev) {
				continue
			}
			h := jobj{{"type", "command"}, {"command", o.hookCommand(ev)}}
			switch ev {
			case "Stop":
				// Runs in the background; exit 2 with text on stderr wakes
				// the idle session. Claude Code still ends an asyncRewake
				// hook at its timeout (600 s unless set), so the waiter
				// gets one as long as it waits.
				h = append(h, jkv{"asyncRewake", true}, jkv{"timeout", ClaudeStopTimeout})
			default:
				h = append(h, jkv{"timeout", 10})
			}
			g := jobj{}
			if ev == "PostToolUse" {
				g = append(g, jkv{"matcher", "*"})
			}
			hooks[ev] = append(g, jkv{"hooks", []any{h}})
		}
		return []target{
			{path: mcpFile, format: fmtJSON, dialect: plainJSON, perm: perm, server: []string{"mcpServers", "parley"},
				serverValue: jobj{{"type", "stdio"}, {"command", o.Command}, {"args", toAny(o.mcpArgs("claude-code"))}}},
			{path: settings, format: fmtJSON, dialect: plainJSON, perm: perm, hooks: hooks},
		}, nil
	case Codex:
		dir := env.CodexHome
		if dir == "" {
			dir = filepath.Join(env.Home, ".codex")
		}
		if o.Scope == Project {
			dir = filepath.Join(env.ProjectDir, ".codex")
		}
		hooks := map[string]jobj{}
		for _, ev := range HookEvents[Codex] {
			if !o.wants(ev) || ev == "notify" {
				continue
			}
			g := jobj{}
			switch ev {
			case "SessionStart":
				g = append(g, jkv{"matcher", "startup|resume"})
			case "PostToolUse":
				g = append(g, jkv{"matcher", "*"})
			}
			hooks[ev] = append(g, jkv{"hooks", []any{jobj{{"type", "command"}, {"command", o.hookCommand(ev)}, {"timeout", 10}}}})
		}
		t := target{path: filepath.Join(dir, "config.toml"), format: fmtTOML, perm: perm, server: []string{"mcp_servers", "parley"},
			serverTOML: []tomlKV{
				{"command", o.Command},
				{"args", o.mcpArgs("codex")},
				// parley mcp may start the node; parley_ask blocks up to 50 s.
				{"startup_timeout_sec", 30},
				{"tool_timeout_sec", 120},
			}}
		if o.wants("notify") {
			t.notify = append(append([]string{o.Command}, o.Args...), "hook", "codex", "notify")
		}
		return []target{t, {path: filepath.Join(dir, "hooks.json"), format: fmtJSON, dialect: plainJSON, perm: perm, hooks: hooks}}, nil
	case Gemini:
		file := filepath.Join(env.Home, ".gemini", "settings.json")
		if o.Scope == Project {
			file = filepath.Join(env.ProjectDir, ".gemini", "settings.json")
		}
		hooks := map[string]jobj{}
		if o.wants("AfterTool") {
			hooks["AfterTool"] = jobj{{"matcher", ".*"}, {"hooks", []any{jobj{
				{"name", "parley"}, {"type", "command"}, {"command", o.hookCommand("AfterTool")}, {"timeout", 10000},
				{"description", "Parley: messages waiting for this agent"}}}}}
		}
		return []target{{path: file, format: fmtJSON, dialect: jsonComments, perm: perm, server: []string{"mcpServers", "parley"},
			serverValue: jobj{{"command", o.Command}, {"args", toAny(o.mcpArgs("gemini-cli"))}}, hooks: hooks}}, nil
	case OpenCode:
		dir := env.XDGConfigHome
		if dir == "" {
			dir = filepath.Join(env.Home, ".config")
		}
		dir = filepath.Join(dir, "opencode")
		if o.Scope == Project {
			dir = env.ProjectDir
		}
		file := filepath.Join(dir, "opencode.json")
		if _, err := os.Stat(file); err != nil {
			if _, err := os.Stat(filepath.Join(dir, "opencode.jsonc")); err == nil {
				file = filepath.Join(dir, "opencode.jsonc")
			}
		}
		return []target{{path: file, format: fmtJSON, dialect: jsonCommentsCommas, perm: perm, server: []string{"mcp", "parley"},
			serverValue: jobj{{"type", "local"}, {"command", toAny(append([]string{o.Command}, o.mcpArgs("opencode")...))}, {"enabled", true}},
			newFile:     "{\n  \"$schema\": \"https://opencode.ai/config.json\"\n}\n"}}, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownClient, o.Client)
}

// configEnvVar names the variable that moves a client's user config files.
func configEnvVar(c Client) string {
	switch c {
	case Claude:
		return "CLAUDE_CONFIG_DIR"
	case Codex:
		return "CODEX_HOME"
	case OpenCode:
		return "XDG_CONFIG_HOME"
	}
	return "HOME"
}

// notes are the one-line things a person must do, or know, after an
// install.
func notes(env Env, o Options, wroteHooks bool) []string {
	var n []string
	switch o.Client {
	case Claude:
		if o.Scope == Project {
			n = append(n, "Claude Code asks once to approve the servers in .mcp.json when it starts in this folder.")
		}
		n = append(n, "For Parley to push messages into an idle Claude Code session, start it with: claude --dangerously-load-development-channels server:parley")
	case Codex:
		if wroteHooks {
			n = append(n, "Codex runs new hooks only after you review and trust them once: type /hooks in Codex.")
		}
		if o.Scope == Project {
			n = append(n, "Codex reads .codex/ only in a trusted project: trust this folder when Codex asks.")
		}
	case Gemini:
		if o.Scope == Project {
			n = append(n, "Gemini CLI reads .gemini/settings.json only in a trusted folder: trust this folder when Gemini asks (or with /permissions).")
		} else if geminiFolderTrust(env) {
			n = append(n, "Gemini CLI starts MCP servers and hooks, your own settings' too, only in a folder you trusted: trust each folder you work in when Gemini asks (or with /permissions).")
		}
	case OpenCode:
		n = append(n, "opencode has no hooks: Parley's notices reach it on Parley's own tool results.")
	}
	return n
}

// --- recognising Parley's entries ---

// known tells Parley's entries by their program: one named parley, or one
// of the programs listed (those an install wrote, whatever their name).
type known []string

// anyName, listed in a known, stands for every program: the entries are
// then told by their arguments alone (`[--home H] mcp`, `hook …`). No
// program is named so (a NUL cannot be in a path).
const anyName = "\x00any"

// anyProgram tells entries shaped as Parley's, whatever their program.
var anyProgram = known{anyName}

// program reports whether argv0 is Parley.
func (k known) program(argv0 string) bool {
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(argv0)), ".exe")
	return base == "parley" || argv0 != "" && (slices.Contains(k, argv0) || slices.Contains(k, anyName))
}

// hookEvent returns the event of a `parley … hook CLIENT EVENT` command line
// for client.
func (k known) hookEvent(cmd string, client Client) (string, bool) {
	argv := splitCommand(cmd)
	if len(argv) < 4 || !k.program(argv[0]) {
		return "", false
	}
	rest := skipGlobalFlags(argv[1:])
	if len(rest) >= 3 && rest[0] == "hook" && rest[1] == string(client) {
		return rest[2], true
	}
	return "", false
}

// server reports whether a decoded MCP server entry starts Parley's MCP
// server.
func (k known) server(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	var argv []string
	switch c := m["command"].(type) {
	case string:
		argv = []string{c}
		if a, ok := m["args"].([]any); ok {
			for _, x := range a {
				s, _ := x.(string)
				argv = append(argv, s)
			}
		}
	case []any:
		for _, x := range c {
			s, _ := x.(string)
			argv = append(argv, s)
		}
	}
	if len(argv) < 2 || !k.program(argv[0]) {
		return false
	}
	rest := skipGlobalFlags(argv[1:])
	return len(rest) > 0 && rest[0] == "mcp"
}

// notify reports whether a decoded Codex notify value runs Parley.
func (k known) notify(v any) bool {
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return false
	}
	s, _ := a[0].(string)
	if !k.program(s) {
		return false
	}
	var rest []string
	for _, x := range a[1:] {
		s, _ := x.(string)
		rest = append(rest, s)
	}
	rest = skipGlobalFlags(rest)
	return len(rest) > 0 && rest[0] == "hook"
}

// isParleyBinary, parleyHookEvent, isParleyServer and isParleyNotify
// recognise by the program's name alone.
func isParleyBinary(argv0 string) bool { return known(nil).program(argv0) }
func parleyHookEvent(cmd string, client Client) (string, bool) {
	return known(nil).hookEvent(cmd, client)
}
func isParleyServer(v any) bool { return known(nil).server(v) }
func isParleyNotify(v any) bool { return known(nil).notify(v) }

// skipGlobalFlags skips parley's global flags at the head of args.
func skipGlobalFlags(args []string) []string {
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--home" || a == "--timeout":
			if len(args) < 2 {
				return nil
			}
			args = args[2:]
		case strings.HasPrefix(a, "--home=") || strings.HasPrefix(a, "--timeout=") || a == "--json":
			args = args[1:]
		default:
			return args
		}
	}
	return args
}

// serverCommand returns the program of a decoded MCP server entry.
func serverCommand(v any) string {
	m, _ := v.(map[string]any)
	switch c := m["command"].(type) {
	case string:
		return c
	case []any:
		if len(c) > 0 {
			s, _ := c[0].(string)
			return s
		}
	}
	return ""
}

// --- shell words ---

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// splitCommand splits a shell command line into words (quotes and
// backslashes as a POSIX shell reads them; no expansions).
func splitCommand(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				cur.WriteString(s[i+1:])
				i = len(s)
				break
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
