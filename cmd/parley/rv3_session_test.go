package main

import "testing"

// Review rv3: `parley run -- claude` gives the program PARLEY_SESSION (its
// run's session key, bound to the agent whose pane the node pastes into)
// and says that "a parley mcp it starts is the same agent". But Claude
// Code starts its MCP servers with CLAUDE_CODE_SESSION_ID in their
// environment (and Codex with CODEX_THREAD_ID), and detectSession takes
// those first: the parley mcp inside the run binds another session key,
// so another agent (the default name, claude-code-FOLDER): asks are pasted
// for the run's agent while the model's Parley tools read and answer as
// the other one, whose inbox never holds them.
func TestRV3MCPInsideARunIsTheRunsAgent(t *testing.T) {
	t.Setenv("PARLEY_SESSION", "run-ABCDEF")
	t.Setenv("PARLEY_AGENT", "reviewer")
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("CLAUDE_CODE_SESSION_ID", "0b6e3c1e-claude-session")
	t.Setenv("CODEX_THREAD_ID", "")
	if got := detectSession(); got != "run-ABCDEF" {
		t.Fatalf("parley mcp inside `parley run -- claude` binds session %q, not its run's %q: it is another agent than the pane's", got, "run-ABCDEF")
	}
}
