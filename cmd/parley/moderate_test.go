package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A user kills a chatty agent from the CLI while its `parley mcp` runs: its
// next say is a tool error that says why and how it is undone; revive lets
// it post again; the per-agent limit of the config refuses the post over
// it, saying so.
func TestAgentKillAndLimitOverMCP(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config"), []byte("agent_post_limit = 4\nmdns = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up(t, home, "--loopback")
	cs := mcpClient(t, home, "chatty")
	r := callTool(t, cs, "parley_register", map[string]any{"name": "chatty"})
	if r.Err {
		t.Fatal(r.Text)
	}
	r = callTool(t, cs, "parley_room_open", map[string]any{"name": "general", "purpose": "talk"})
	if r.Err {
		t.Fatal(r.Text)
	}
	if r = callTool(t, cs, "parley_say", map[string]any{"room": "general", "text": "one"}); r.Err {
		t.Fatal(r.Text)
	}

	if out, errs, code := run(t, "--home", home, "agent", "kill", "chatty"); code != 0 || !strings.Contains(out, "killed") {
		t.Fatalf("agent kill: %d %s %s", code, out, errs)
	}
	r = callTool(t, cs, "parley_say", map[string]any{"room": "general", "text": "still here?"})
	if !r.Err || !strings.Contains(r.Text, "killed") || !strings.Contains(r.Text, "parley agent revive chatty") {
		t.Fatalf("a killed agent's say: err=%v %s", r.Err, r.Text)
	}
	var agents []struct {
		Name string `json:"name"`
	}
	runJSON(t, &agents, "--home", home, "agent", "list")
	for _, a := range agents {
		if a.Name == "chatty" {
			t.Fatal("a killed agent is still registered")
		}
	}
	if _, errs, code := run(t, "--home", home, "agent", "register", "quiet"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, "--home", home, "agent", "mute", "quiet"); code != 0 {
		t.Fatal(errs)
	}
	// Holds with no end say what ends them, not a state they are not in.
	out, _, _ := run(t, "--home", home, "agent", "muted")
	if !regexp.MustCompile(`(?m)^chatty@\S+\s+killed\s+when revived\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^quiet@\S+\s+muted\s+when unmuted\s`).MatchString(out) || !strings.Contains(out, "ENDS") {
		t.Fatalf("agent muted: %s", out)
	}
	if _, errs, code := run(t, "--home", home, "agent", "kill", "nobody"); code == 0 || !strings.Contains(errs, "parley agent list") {
		t.Fatalf("kill of an agent that is not there: %d %s", code, errs)
	}
	if _, errs, code := run(t, "--home", home, "agent", "revive", "chatty"); code != 0 {
		t.Fatal(errs)
	}

	// The room's opening and "one" were posts 1 and 2 of the minute; posts
	// 3 and 4 pass; the 5th is over the limit.
	for i := range 2 {
		if r = callTool(t, cs, "parley_say", map[string]any{"room": "general", "text": "again"}); r.Err {
			t.Fatalf("post %d: %s", i+3, r.Text)
		}
	}
	r = callTool(t, cs, "parley_say", map[string]any{"room": "general", "text": "too much"})
	if !r.Err || !strings.Contains(r.Text, "agent_post_limit") {
		t.Fatalf("the post over the limit: err=%v %s", r.Err, r.Text)
	}
	if out, _, _ := run(t, "--home", home, "room", "log", "general"); strings.Contains(out, "too much") || strings.Contains(out, "still here?") {
		t.Fatalf("a refused post is in the log:\n%s", out)
	}

	// An ask nobody answers in --wait exits 1, saying so; the ask is made.
	out, errs, code := run(t, "--home", home, "room", "ask", "general", "anyone?", "--wait", "1s")
	if code != 1 || !strings.HasPrefix(out, "asked (id ") || !strings.Contains(errs, "no reply within 1s") {
		t.Fatalf("an ask with no reply: exit %d %q %q", code, out, errs)
	}

	// NAME@HANDLE: the answer says which node's agent the handle stood for.
	var id struct {
		PeerID string `json:"peer_id"`
		Handle string `json:"handle"`
	}
	runJSON(t, &id, "--home", home, "id")
	byHandle := "chatty@" + id.Handle
	for _, verb := range []string{"mute", "unmute"} {
		out, errs, code := run(t, "--home", home, "agent", verb, byHandle)
		if code != 0 || !strings.Contains(out, byHandle+" (chatty@"+id.PeerID+")") {
			t.Fatalf("agent %s %s: %d %q %s", verb, byHandle, code, out, errs)
		}
	}
}
