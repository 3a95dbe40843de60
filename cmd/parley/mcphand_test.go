package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Regression: the node marked the pending items of a tool result handed out
// when it built the result, so a `parley mcp` that never wrote the result
// (killed, its client gone, its stdout broken) lost them: the agent's next
// session saw them neither as pending nor as unread. parley mcp now takes
// them in two steps and confirms only a result it wrote; the node offers
// unconfirmed items again after --hand-wait, to the agent's next session.
func TestMCPToolResultNeverWrittenIsHandedAgain(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback, "--hand-wait", "3s")
	const session, agent = "s1", "test-s1" // the default name of --client test --project /src/s1

	// The agent's first session: its MCP server is up (the agent is
	// registered), then its client stops reading its output.
	proc := startMCPProcess(t, home, "--session", session, "--client", "test", "--project", "/src/"+session)
	stdin, stdout, stderr, exited := proc.stdin, proc.stdout, proc.stderr, proc.exited
	out := bufio.NewReader(stdout)
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if l, err := out.ReadString('\n'); err != nil || !strings.Contains(l, `"id":1`) {
		t.Fatalf("initialize: %q, %v\n%s", l, err, stderr)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}

	// Something for the agent: an invitation, a message and an ask.
	for _, args := range [][]string{
		{"room", "create", "solo"},
		{"room", "invite", "solo", agent},
		{"room", "say", "solo", "hello before the crash"},
		{"room", "ask", "solo", "are you still there?", "--to", agent, "--wait", "0"},
	} {
		if _, errs, code := run(t, append([]string{"--home", home}, args...)...); code != 0 {
			t.Fatalf("parley %v: %s", args, errs)
		}
	}

	// The client stops reading, then calls a tool: the node hands the
	// items out in the result, whose write kills the server (SIGPIPE).
	stdout.Close()
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"parley_who","arguments":{}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("parley mcp ended with %v, not killed by its broken output\n%s", err, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("parley mcp did not end on its broken output\n%s", stderr)
	}
	// The node handed the items out: they are not pending now.
	var p localapi.Pending
	runJSON(t, &p, "--home", home, "inbox", "--as", agent)
	for _, it := range p.Items {
		if it.Kind == "message" || it.Kind == "ask" || it.Kind == "invitation" {
			t.Fatalf("the items were not handed out to the server that died: %s %q pending", it.Kind, it.Text)
		}
	}

	// The agent's next session gets them once the hand wait passed.
	cs := mcpClient(t, home, session)
	want := map[string]string{"invitation": "", "message": "hello before the crash", "ask": "are you still there?"}
	got := map[string]bool{}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		r := callTool(t, cs, "parley_who", nil)
		for _, it := range r.pending() {
			kind, _ := it["kind"].(string)
			text, _ := it["text"].(string)
			if w, ok := want[kind]; ok && (w == "" || strings.Contains(text, w)) {
				got[kind] = true
			}
		}
		return len(got) == len(want)
	}, "the items the dead server never wrote to be handed to the next session (got %v)", got)
}

// A normal session's items are shown once: its results are written, and
// their hand-outs confirmed, so nothing is offered again after the hand
// wait.
func TestMCPWrittenToolResultIsNotHandedAgain(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback, "--hand-wait", "1s")
	cs := mcpClient(t, home, "s2")
	const agent = "test-s2"
	for _, args := range [][]string{
		{"room", "create", "solo"},
		{"room", "invite", "solo", agent},
		{"room", "say", "solo", "say it once"},
	} {
		if _, errs, code := run(t, append([]string{"--home", home}, args...)...); code != 0 {
			t.Fatalf("parley %v: %s", args, errs)
		}
	}
	shows := func() bool {
		for _, it := range callTool(t, cs, "parley_who", nil).pending() {
			if text, _ := it["text"].(string); strings.Contains(text, "say it once") {
				return true
			}
		}
		return false
	}
	nodetest.WaitFor(t, 20*time.Second, shows, "the message to be shown")
	if nodetest.Poll(4*time.Second, shows) {
		t.Fatal("a message shown in a written tool result was shown again after the hand wait")
	}
}

// A hook whose output never reaches its client (its stdout broken) does
// not confirm the items it took: the next hook shows them again, after the
// hand wait; a hook whose output was written confirms them, and they are
// not shown again.
func TestHookOutputNeverWrittenIsHandedAgain(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback, "--hand-wait", "2s")
	proj := filepath.Join(t.TempDir(), "shop")
	in := func(event, extra string) string {
		return `{"session_id":"sess-h","cwd":"` + proj + `","hook_event_name":"` + event + `"` + extra + `}`
	}
	if _, errs, code := runStdin(t, in("SessionStart", `,"source":"startup"`), "--home", home, "hook", "claude", "SessionStart"); code != 0 {
		t.Fatalf("SessionStart: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "create", "release", "--member", "claude-code-shop"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "say", "release", "the hook must not lose this"); code != 0 {
		t.Fatalf("room say: %s", errs)
	}
	post := in("PostToolUse", `,"tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a"},"tool_use_id":"t1"`)

	// The first hook's stdout is a pipe nobody reads: its write fails.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := exec.Command(parleyBin, "--home", home, "hook", "claude", "PostToolUse")
	cmd.Stdin = strings.NewReader(post)
	cmd.Stdout = w
	errb := &syncBuffer{}
	cmd.Stderr = errb
	err = cmd.Run()
	w.Close()
	if err == nil {
		t.Fatalf("the hook whose output could not be written succeeded\n%s", errb)
	}

	shows := func() bool {
		out, errs, code := runStdin(t, post, "--home", home, "hook", "claude", "PostToolUse")
		if code != 0 {
			t.Fatalf("PostToolUse: exit %d: %s", code, errs)
		}
		return strings.Contains(out, "the hook must not lose this")
	}
	nodetest.WaitFor(t, 30*time.Second, shows, "the next hook to show the message the broken one took")
	if nodetest.Poll(4*time.Second, shows) {
		t.Fatal("a message a hook wrote out was shown again after the hand wait")
	}
}
