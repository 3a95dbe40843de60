package main

import (
	"testing"

	"github.com/parley-mesh/parley/internal/install"
)

// A client started by `parley run` has the run's session key in
// PARLEY_SESSION as well as its own (CLAUDE_CODE_SESSION_ID): the parley mcp
// it starts must bind the run's key, or it is another agent than the pane's,
// and asks pasted for the run's agent are read and answered by no one.
func TestMCPInsideARunIsTheRunsAgent(t *testing.T) {
	t.Setenv("PARLEY_SESSION", "run-ABCDEF")
	t.Setenv("PARLEY_AGENT", "reviewer")
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("CLAUDE_CODE_SESSION_ID", "0b6e3c1e-claude-session")
	t.Setenv("CODEX_THREAD_ID", "")
	if got := detectSession(); got != "run-ABCDEF" {
		t.Fatalf("parley mcp inside `parley run -- claude` binds session %q, not its run's %q: it is another agent than the pane's", got, "run-ABCDEF")
	}
	t.Setenv("PARLEY_SESSION", "")
	if got := detectSession(); got != "0b6e3c1e-claude-session" {
		t.Fatalf("outside a run, parley mcp binds %q, not the client's session key", got)
	}
}

// The client's hooks inside a run bind, wake and wait for the run's agent,
// as its parley mcp does: the run's key stands for the client's session_id.
func TestHookInsideARunIsTheRunsAgent(t *testing.T) {
	t.Setenv("PARLEY_SESSION", "run-ABCDEF")
	in, err := parseHookInput([]byte(`{"session_id":"0b6e3c1e-claude-session","hook_event_name":"Stop"}`), install.Claude, "Stop")
	if err != nil || in.SessionID != "run-ABCDEF" {
		t.Fatalf("a Claude Code hook inside a run binds session %q (err %v), not the run's", in.SessionID, err)
	}
	in, ok, err := parseCodexNotify(`{"type":"agent-turn-complete","thread-id":"codex-thread","cwd":"/x"}`)
	if err != nil || !ok || in.SessionID != "run-ABCDEF" {
		t.Fatalf("Codex's notify inside a run binds session %q (ok %v, err %v), not the run's", in.SessionID, ok, err)
	}
	t.Setenv("PARLEY_SESSION", "")
	if in, err := parseHookInput([]byte(`{"session_id":"0b6e3c1e-claude-session"}`), install.Claude, "Stop"); err != nil || in.SessionID != "0b6e3c1e-claude-session" {
		t.Fatalf("outside a run, a hook binds %q (err %v), not the client's session_id", in.SessionID, err)
	}
}
