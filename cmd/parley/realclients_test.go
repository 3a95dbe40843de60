package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The real clients read what `parley install` wrote: each client found on
// PATH reads its config, with an unrelated MCP server and settings of the
// user's already in it, without a complaint; sees Parley's server and, where
// it checks one, starts it (`parley mcp` against a node of the test) and
// connects; loads Parley's hooks where it can list or run them without a
// model; and after `parley uninstall` reads the user's config as it was.
// A client not on PATH is skipped. To run them all:
//
//	npm install --prefix DIR @anthropic-ai/claude-code @openai/codex @google/gemini-cli opencode-ai
//	PATH=DIR/node_modules/.bin:$PATH go test -race -run TestCLIInstallIntoTheRealClients ./cmd/parley
//
// Checked so with Claude Code 2.1.197, Codex 0.171.0, Gemini CLI 0.61.0 and
// opencode 1.18.33. The clients run with a fake home and without a login;
// their network traffic is turned off where they have a switch for it, and
// the model calls they cannot make go to loopback or are never made.
func TestCLIInstallIntoTheRealClients(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		check func(t *testing.T, rc realClient)
	}{
		{"claude", checkClaude},
		{"codex", checkCodex},
		{"gemini", checkGemini},
		{"opencode", checkOpenCode},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bin, err := exec.LookPath(c.name)
			if err != nil {
				t.Skipf("%s is not on PATH (npm install --prefix DIR @anthropic-ai/claude-code @openai/codex @google/gemini-cli opencode-ai; PATH=DIR/node_modules/.bin:$PATH)", c.name)
			}
			u := newUser(t)
			// A node of its own: its home's record of installs is this
			// user's alone, as doctor expects.
			home := filepath.Join(t.TempDir(), "ph")
			up(t, home, "--listen", loopback)
			c.check(t, realClient{t: t, u: u, bin: bin, home: home, name: c.name})
		})
	}
}

// realClient is one client and its fake user.
type realClient struct {
	t    *testing.T
	u    userDirs
	bin  string // the client's program
	home string // the node's home
	name string
	env  []string // more of the client's environment
}

var ansiRe = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// run runs the client in the project folder and returns its stdout and
// stderr together, without colours.
func (c realClient) run(args ...string) (string, int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.u.project
	cmd.Env = c.environ()
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("%s %v: %v", c.name, args, err)
	}
	if ctx.Err() != nil {
		c.t.Fatalf("%s %v: no end in 2 minutes\n%s", c.name, args, out)
	}
	return ansiRe.ReplaceAllString(string(out), ""), code
}

func (c realClient) environ() []string {
	return append([]string{"HOME=" + c.u.home, "PATH=" + os.Getenv("PATH"), "GORACE=" + os.Getenv("GORACE"), "TERM=dumb", "NO_COLOR=1"}, c.env...)
}

// parley runs parley as the user with the node's home; it must succeed.
func (c realClient) parley(args ...string) string {
	c.t.Helper()
	out, errs, code := c.u.run(c.t, append([]string{"--home", c.home}, args...)...)
	if code != 0 {
		c.t.Fatalf("parley %v: exit %d\n%s\n%s", args, code, out, errs)
	}
	return out
}

// installAndDoctor installs Parley into the client and has doctor find it
// intact; it returns what install said.
func (c realClient) installAndDoctor() string {
	c.t.Helper()
	said := c.parley("install", c.name)
	if out := c.parley("doctor"); !strings.Contains(out, "ok   "+c.name+" (user): Parley's entries are intact") {
		c.t.Fatalf("doctor after install:\n%s", out)
	}
	return said
}

// write writes a file of the user's.
func (c realClient) write(rel, content string) string {
	c.t.Helper()
	p := filepath.Join(c.u.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// line returns the line of out that holds s, or "".
func line(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

func checkClaude(t *testing.T, c realClient) {
	// No telemetry, update or registry fetches; no login, so `claude -p`
	// makes no model call, and one it made would go to loopback.
	c.env = []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "ANTHROPIC_BASE_URL=http://127.0.0.1:9"}
	cfg := c.write(".claude.json", `{
  "numStartups": 1,
  "mcpServers": {
    "other": {"type": "stdio", "command": "/bin/cat", "args": []}
  }
}
`)
	settings := c.write(".claude/settings.json", `{
  "permissions": {"allow": ["Bash(ls:*)"]},
  "hooks": {
    "PostToolUse": [
      {"matcher": "Edit", "hooks": [{"type": "command", "command": "echo mine"}]}
    ]
  },
  "model": "sonnet"
}
`)
	origSettings := readAll(t, settings)
	c.installAndDoctor()

	// claude mcp list starts each stdio server to check its health.
	out, code := c.run("mcp", "list")
	if l := line(out, "parley: "+parleyBin); code != 0 || !strings.Contains(l, "Connected") || line(out, "other: /bin/cat") == "" {
		t.Fatalf("claude mcp list: exit %d\n%s", code, out)
	}
	out, code = c.run("mcp", "get", "parley")
	if code != 0 || !strings.Contains(out, "Connected") || !strings.Contains(out, "Args: --home "+c.home+" mcp --client claude-code") {
		t.Fatalf("claude mcp get parley: exit %d\n%s", code, out)
	}
	// A print-mode session reads the settings, runs the SessionStart hook
	// and connects the server before it finds it has no login.
	debug := filepath.Join(t.TempDir(), "claude-debug.log")
	out, _ = c.run("-p", "hello", "--debug-file", debug)
	log := readAll(t, debug)
	if !strings.Contains(log, "Hook SessionStart:startup (SessionStart) success") || !strings.Contains(log, `MCP server "parley": Successfully connected`) {
		t.Fatalf("claude -p: the SessionStart hook or the server did not run\n%s\n%s", out, log)
	}

	c.parley("uninstall", "claude")
	if got := readAll(t, settings); got != origSettings {
		t.Fatalf("settings.json after uninstall:\n%s", got)
	}
	// Claude Code rewrites ~/.claude.json with its own state: the user's
	// server is there, Parley's is not.
	var state struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(readAll(t, cfg)), &state); err != nil || state.MCPServers["other"] == nil || state.MCPServers["parley"] != nil {
		t.Fatalf(".claude.json after uninstall: %v\n%s", err, readAll(t, cfg))
	}
	out, code = c.run("mcp", "list")
	if code != 0 || line(out, "other: /bin/cat") == "" || strings.Contains(out, "parley") {
		t.Fatalf("claude mcp list after uninstall: exit %d\n%s", code, out)
	}
}

func checkCodex(t *testing.T, c realClient) {
	config := c.write(".codex/config.toml", `# mine
model = "gpt-5"

[mcp_servers.other]
command = "/bin/cat"

[tui]
notifications = true
`)
	hooks := c.write(".codex/hooks.json", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}}
`)
	origConfig, origHooks := readAll(t, config), readAll(t, hooks)
	c.installAndDoctor()

	out, code := c.run("mcp", "list")
	if l := line(out, "parley "); code != 0 || !strings.Contains(l, parleyBin) || !strings.Contains(l, "enabled") || line(out, "/bin/cat") == "" {
		t.Fatalf("codex mcp list: exit %d\n%s", code, out)
	}
	out, code = c.run("mcp", "get", "parley")
	if code != 0 || !strings.Contains(out, "startup_timeout_sec: 30") || !strings.Contains(out, "tool_timeout_sec: 120") {
		t.Fatalf("codex mcp get parley: exit %d\n%s", code, out)
	}
	// codex mcp list starts no server: its app server lists the hooks it
	// loaded and starts the servers for their tools.
	res := codexAppServer(t, c, []codexCall{
		{"hooks/list", map[string]any{"cwds": []string{c.u.project}}},
		{"mcpServerStatus/list", map[string]any{}},
	})
	var hl struct {
		Data []struct {
			Hooks []struct {
				EventName string `json:"eventName"`
				Command   string `json:"command"`
			} `json:"hooks"`
			Warnings []any `json:"warnings"`
			Errors   []any `json:"errors"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res[0], &hl); err != nil || len(hl.Data) != 1 {
		t.Fatalf("hooks/list: %v\n%s", err, res[0])
	}
	got := map[string]bool{}
	for _, h := range hl.Data[0].Hooks {
		if strings.HasPrefix(h.Command, parleyBin+" ") {
			got[h.EventName] = true
		}
	}
	if d := hl.Data[0]; len(d.Warnings) > 0 || len(d.Errors) > 0 || !got["sessionStart"] || !got["postToolUse"] || !got["stop"] || len(d.Hooks) != 4 {
		t.Fatalf("hooks/list: Parley's hooks %v\n%s", got, res[0])
	}
	var sl struct {
		Data []struct {
			Name  string         `json:"name"`
			Tools map[string]any `json:"tools"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res[1], &sl); err != nil {
		t.Fatalf("mcpServerStatus/list: %v\n%.2000s", err, res[1])
	}
	connected := false
	for _, s := range sl.Data {
		if s.Name == "parley" && s.Tools["parley_board"] != nil {
			connected = true
		}
	}
	if !connected {
		t.Fatalf("mcpServerStatus/list: no parley server with its tools\n%.2000s", res[1])
	}

	c.parley("uninstall", "codex")
	if readAll(t, config) != origConfig || readAll(t, hooks) != origHooks {
		t.Fatalf("after uninstall:\n%s\n%s", readAll(t, config), readAll(t, hooks))
	}
	out, code = c.run("mcp", "list")
	if code != 0 || line(out, "/bin/cat") == "" || strings.Contains(out, "parley") {
		t.Fatalf("codex mcp list after uninstall: exit %d\n%s", code, out)
	}
}

type codexCall struct {
	method string
	params any
}

// codexAppServer runs `codex app-server`, initializes it and returns the
// result of each call, made one after the other.
func codexAppServer(t *testing.T, c realClient, calls []codexCall) []json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "app-server")
	cmd.Dir = c.u.project
	cmd.Env = c.environ()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	type reply struct {
		ID     *int            `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	replies := make(chan reply, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var r reply
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.ID != nil {
				replies <- r
			}
		}
		close(replies)
	}()
	send := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatalf("codex app-server: %v\n%s", err, stderr)
		}
	}
	await := func(id int) json.RawMessage {
		for {
			select {
			case r, ok := <-replies:
				if !ok {
					t.Fatalf("codex app-server ended before answering %d\n%s", id, stderr)
				}
				if *r.ID != id {
					continue
				}
				if r.Error != nil {
					t.Fatalf("codex app-server call %d: %s", id, r.Error)
				}
				return r.Result
			case <-ctx.Done():
				t.Fatalf("codex app-server: no answer to %d\n%s", id, stderr)
			}
		}
	}
	send(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "parley-test", "version": "0"}}})
	await(0)
	send(map[string]any{"method": "initialized"})
	var out []json.RawMessage
	for i, call := range calls {
		send(map[string]any{"id": i + 1, "method": call.method, "params": call.params})
		out = append(out, await(i+1))
	}
	return out
}

func checkGemini(t *testing.T, c realClient) {
	settings := c.write(".gemini/settings.json", `{
  // mine
  "general": {"vimMode": true},
  "mcpServers": {
    "other": {"command": "/bin/cat", "args": []}
  },
  "hooks": {
    "BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "echo mine"}]}]
  }
}
`)
	orig := readAll(t, settings)
	if said := c.installAndDoctor(); !strings.Contains(said, "only in a folder you trusted") {
		t.Fatalf("install says nothing of folder trust:\n%s", said)
	}

	// Gemini CLI starts no server, the user's own included, in a folder
	// not trusted (Parley's install note says so)...
	out, code := c.run("mcp", "list")
	if l := line(out, "parley: "+parleyBin); code != 0 || !strings.Contains(l, "Disabled") || !strings.Contains(out, "untrusted") {
		t.Fatalf("gemini mcp list in an untrusted folder: exit %d\n%s", code, out)
	}
	// ...and in a trusted one connects to it. It validates the settings,
	// hooks included, and would say "Invalid configuration".
	c.env = []string{"GEMINI_CLI_TRUST_WORKSPACE=true"}
	out, code = c.run("mcp", "list")
	if l := line(out, "parley: "+parleyBin); code != 0 || !strings.Contains(l, "Connected") || line(out, "other: /bin/cat") == "" || strings.Contains(out, "Invalid configuration") {
		t.Fatalf("gemini mcp list: exit %d\n%s", code, out)
	}

	c.parley("uninstall", "gemini")
	if got := readAll(t, settings); got != orig {
		t.Fatalf("after uninstall:\n%s", got)
	}
	out, code = c.run("mcp", "list")
	if code != 0 || line(out, "other: /bin/cat") == "" || strings.Contains(out, "parley") {
		t.Fatalf("gemini mcp list after uninstall: exit %d\n%s", code, out)
	}
}

func checkOpenCode(t *testing.T, c realClient) {
	c.env = []string{"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1"}
	config := c.write(".config/opencode/opencode.jsonc", `{
  // mine
  "$schema": "https://opencode.ai/config.json",
  "theme": "tokyonight",
  "mcp": {
    "other": {"type": "local", "command": ["/bin/cat"], "enabled": false},
  },
}
`)
	orig := readAll(t, config)
	c.installAndDoctor()

	out, code := c.run("mcp", "list")
	if l := line(out, "parley"); code != 0 || !strings.Contains(l, "connected") || !strings.Contains(out, parleyBin+" --home "+c.home+" mcp --client opencode") || line(out, "other") == "" {
		t.Fatalf("opencode mcp list: exit %d\n%s", code, out)
	}
	out, code = c.run("debug", "config")
	var cfg struct {
		MCP map[string]struct {
			Type    string   `json:"type"`
			Command []string `json:"command"`
			Enabled bool     `json:"enabled"`
		} `json:"mcp"`
	}
	if i := strings.Index(out, "{"); code != 0 || i < 0 || json.Unmarshal([]byte(out[i:]), &cfg) != nil {
		t.Fatalf("opencode debug config: exit %d\n%s", code, out)
	}
	if p := cfg.MCP["parley"]; p.Type != "local" || !p.Enabled || len(p.Command) == 0 || p.Command[0] != parleyBin || cfg.MCP["other"].Command == nil {
		t.Fatalf("opencode debug config: %+v", cfg.MCP)
	}

	c.parley("uninstall", "opencode")
	if got := readAll(t, config); got != orig {
		t.Fatalf("after uninstall:\n%s", got)
	}
	out, code = c.run("mcp", "list")
	if code != 0 || line(out, "other") == "" || strings.Contains(out, "parley") {
		t.Fatalf("opencode mcp list after uninstall: exit %d\n%s", code, out)
	}
}
