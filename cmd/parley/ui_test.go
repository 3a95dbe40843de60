package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// parley ui prints the dashboard's address on the port of the config; the
// page answers with its token and 401 without (a text that says to run
// parley ui).
func TestCLIUI(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := fmt.Sprintf("handle = tester\nlisten = /ip4/127.0.0.1/tcp/0\nmdns = false\nui_port = %d\n", port)
	if err := os.WriteFile(filepath.Join(home, "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := up(t, home); strings.Contains(d.ready, "dashboard_error") {
		t.Fatalf("the ready line: %s", d.ready)
	}
	// A second node whose ui_port is taken runs without its dashboard and
	// says so on its ready line, and `parley ui` says why.
	other := filepath.Join(t.TempDir(), "h2")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := up(t, other); !strings.Contains(d.ready, `dashboard_error="not served: `) || !strings.Contains(d.ready, "address already in use") {
		t.Fatalf("the ready line of a node whose ui_port is taken: %s", d.ready)
	}
	if _, errs, code := run(t, "--home", other, "ui"); code == 0 || !strings.Contains(errs, "address already in use") {
		t.Fatalf("parley ui of a node without its dashboard: exit %d %s", code, errs)
	}
	out, errs, code := run(t, "--home", home, "ui")
	url := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(url, fmt.Sprintf("http://127.0.0.1:%d/?c=", port)) {
		t.Fatalf("parley ui: exit %d %q %s", code, out, errs)
	}
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if c, body := get(url); c != 200 || !strings.Contains(body, "<title>Parley</title>") {
		t.Fatalf("the page: %d", c)
	}
	tokRaw, err := os.ReadFile(filepath.Join(home, "ui.token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokRaw))
	if strings.Contains(url, token) {
		t.Fatalf("parley ui printed the token: %q", url)
	}
	// Without the token: 401, and a text naming this very command.
	if c, body := get(strings.Split(url, "?")[0]); c != 401 || !strings.Contains(body, "`parley ui`") || strings.Contains(body, "?t=") {
		t.Fatalf("without the token: %d %q", c, body)
	}

	// --open hands the opener a page in the home, not the address: a
	// command line is for every user of the machine to read.
	bin := t.TempDir()
	argv := filepath.Join(bin, "argv")
	opener := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argv + ".tmp && mv " + argv + ".tmp " + argv + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(opener), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(parleyBin, "--home", home, "ui", "--open")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("parley ui --open: %v %s", err, b)
	}
	var args []byte
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		args, err = os.ReadFile(argv)
		return err == nil
	}, "the opener to run")
	page := filepath.Join(home, "ui-open.html")
	if strings.Contains(string(args), token) || strings.TrimSpace(string(args)) != "file://"+page {
		t.Fatalf("the opener's command line: %q", args)
	}
	fi, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("the page that carries the address has mode %04o", fi.Mode().Perm())
	}
	body, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	// It sends the browser to an address of its own, which opens the
	// dashboard once, and holds no token.
	prefix := `http-equiv="refresh" content="0; url=` + fmt.Sprintf("http://127.0.0.1:%d/?c=", port)
	if !strings.Contains(string(body), prefix) || strings.Contains(string(body), url) || strings.Contains(string(body), token) {
		t.Fatalf("the page does not send the browser to a new address of the dashboard:\n%s", body)
	}
}

// The Claude Code and Codex hooks read the session's transcript and report
// its tokens: each record once however often the hooks run, history before
// the session's start not at all; they show in `parley usage`, in the
// Prometheus series and on the dashboard, and cost stays unknown when the
// transcript has none. A transcript that is missing or has bad lines fails
// no hook.
func TestCLIHookTokensFromTranscript(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	dir := t.TempDir()
	proj := filepath.Join(dir, "shop")
	tr := filepath.Join(dir, "sess-7.jsonl")
	assistant := func(id string, in, out, cw, cr int) string {
		return fmt.Sprintf(`{"parentUuid":null,"type":"assistant","uuid":"u-%s","sessionId":"sess-7","requestId":"req-%s","message":{"id":"%s","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"service_tier":"standard"}},"timestamp":"2026-01-01T00:00:00Z"}`+"\n",
			id, id, id, in, cw, cr, out)
	}
	write := func(path, s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	in := func(event, path, extra string) string {
		return `{"session_id":"sess-7","transcript_path":"` + path + `","cwd":"` + proj + `","permission_mode":"default","hook_event_name":"` + event + `"` + extra + `}`
	}
	hook := func(client, event, stdin string, args ...string) string {
		t.Helper()
		out, errs, code := runStdin(t, stdin, append([]string{"--home", home, "hook", client, event}, args...)...)
		if code != 0 {
			t.Fatalf("%s %s: exit %d: %s %s", client, event, code, out, errs)
		}
		return errs
	}
	// A resumed session: what it spent before it started here is not counted.
	write(tr, `{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"+assistant("msg_old", 500, 500, 0, 0))
	hook("claude", "SessionStart", in("SessionStart", tr, `,"source":"resume"`))
	// A response written three times (a streaming snapshot, then one line
	// per content block), a bad line, then a tool result.
	write(tr, assistant("msg_1", 4, 1, 200, 3000)+assistant("msg_1", 4, 60, 200, 3000)+assistant("msg_1", 4, 60, 200, 3000)+"{oops\n")
	bash := in("PostToolUse", tr, `,"tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a"},"tool_use_id":"t1"`)
	if errs := hook("claude", "PostToolUse", bash); !strings.Contains(errs, "not JSON") {
		t.Fatalf("no note of the bad line: %q", errs)
	}
	hook("claude", "PostToolUse", bash) // nothing new
	write(tr, assistant("msg_2", 6, 40, 0, 3200))
	hook("claude", "Stop", in("Stop", tr, `,"stop_hook_active":false`), "--wait-for", "1s")
	hook("claude", "PostToolUse", bash)
	// Missing transcript: a note, the hook goes on.
	if errs := hook("claude", "PostToolUse", in("PostToolUse", filepath.Join(dir, "gone.jsonl"), `,"tool_name":"Bash"`)); !strings.Contains(errs, "gone.jsonl") {
		t.Fatalf("no note of the missing transcript: %q", errs)
	}

	// Codex: running totals in its rollout file.
	rollout := filepath.Join(dir, "rollout-2026-01-01-thread-3.jsonl")
	tc := func(in, cached, out int) string {
		return fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":5,"total_tokens":%d},"last_token_usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1,"reasoning_output_tokens":0,"total_tokens":2},"model_context_window":272000},"rate_limits":null}}`+"\n", in, cached, out, in+out)
	}
	write(rollout, `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"thread-3","cwd":"`+proj+`"}}`+"\n"+tc(1200, 1000, 30)+tc(2000, 1500, 70))
	codex := `{"session_id":"thread-3","transcript_path":"` + rollout + `","cwd":"` + proj + `","hook_event_name":"PostToolUse","model":"gpt-5-codex","turn_id":"1","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":"a","tool_use_id":"c1"}`
	hook("codex", "PostToolUse", codex)
	hook("codex", "PostToolUse", codex)

	claudeIn, claudeOut := uint64(4+200+3000+6+3200), uint64(60+40)
	var u struct {
		Agents []struct {
			Name       string
			TokensIn   *uint64  `json:"tokens_in"`
			TokensOut  *uint64  `json:"tokens_out"`
			CacheRead  *uint64  `json:"cache_read_tokens"`
			CacheWrite *uint64  `json:"cache_write_tokens"`
			CostUSD    *float64 `json:"cost_usd"`
		}
	}
	runJSON(t, &u, "--home", home, "usage")
	got := map[string]string{}
	for _, a := range u.Agents {
		if a.TokensIn == nil || a.TokensOut == nil || a.CacheRead == nil || a.CacheWrite == nil || a.CostUSD != nil {
			t.Fatalf("usage of %s: %+v", a.Name, a)
		}
		got[a.Name] = fmt.Sprintf("%d/%d/%d/%d", *a.TokensIn, *a.TokensOut, *a.CacheRead, *a.CacheWrite)
	}
	want := map[string]string{"claude-code-shop": fmt.Sprintf("%d/%d/%d/%d", claudeIn, claudeOut, 6200, 200), "codex-shop": "2000/70/1500/0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("usage %v, want %v", got, want)
	}
	if out, _, _ := run(t, "--home", home, "usage"); !strings.Contains(out, "claude-code-shop") || !strings.Contains(out, "unknown") {
		t.Fatalf("parley usage:\n%s", out)
	}

	// The same in the Prometheus series and on the dashboard.
	c := localapi.NewClient(filepath.Join(home, "parley.sock"))
	defer c.Close()
	metrics, err := c.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprintf(`parley_agent_tokens_total{agent="claude-code-shop",direction="in"} %d`, claudeIn),
		fmt.Sprintf(`parley_agent_tokens_total{agent="claude-code-shop",direction="out"} %d`, claudeOut),
		`parley_agent_cache_tokens_total{agent="claude-code-shop",kind="read"} 6200`,
		`parley_agent_tokens_total{agent="codex-shop",direction="in"} 2000`,
	} {
		if !strings.Contains(metrics, s) {
			t.Fatalf("no %s in the metrics", s)
		}
	}
	if strings.Contains(metrics, "parley_agent_cost_usd_total{") {
		t.Fatal("a cost no client reported")
	}
	info, err := c.UI(context.Background())
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	base, _, _ := strings.Cut(info.URL, "/?c=")
	tokRaw, err := os.ReadFile(filepath.Join(home, "ui.token"))
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(tokRaw))
	req, err := http.NewRequest("GET", base+"/ui/state", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var state struct {
		Usage struct {
			Agents []struct {
				Name     string
				TokensIn *uint64 `json:"tokens_in"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&state); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range state.Usage.Agents {
		found = found || (a.Name == "claude-code-shop" && a.TokensIn != nil && *a.TokensIn == claudeIn)
	}
	if !found {
		t.Fatalf("the dashboard's usage: %+v", state.Usage)
	}
}
