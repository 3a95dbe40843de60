package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// runStdin runs one CLI command with stdin and returns stdout, stderr and the
// exit code.
func runStdin(t testing.TB, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(parleyBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return runPrepared(t, cmd)
}

// waiter is a hook process running in the background.
type waiter struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan int
}

func startHook(t testing.TB, stdin string, args ...string) *waiter {
	t.Helper()
	w := &waiter{cmd: exec.Command(parleyBin, args...), stderr: &syncBuffer{}, done: make(chan int, 1)}
	w.cmd.Stdin = strings.NewReader(stdin)
	w.cmd.Stderr = w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := w.cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		w.done <- code
	}()
	t.Cleanup(func() {
		// Killed whether it ended or not (ProcessState is Wait's to write,
		// on the goroutine above): a kill of an ended process fails, and
		// that is all.
		_ = w.cmd.Process.Kill()
	})
	return w
}

// exited waits for the hook to exit and returns its code.
func (w *waiter) exited(t testing.TB, within time.Duration) int {
	t.Helper()
	select {
	case c := <-w.done:
		return c
	case <-time.After(within):
		t.Fatalf("the hook did not exit within %s; stderr: %s", within, w.stderr)
	}
	return 0
}

// running checks that the hook has not exited (after a short look).
func (w *waiter) running(t *testing.T) {
	t.Helper()
	select {
	case c := <-w.done:
		t.Fatalf("the hook exited (%d); stderr: %s", c, w.stderr)
	case <-time.After(300 * time.Millisecond):
	}
}

// waitStopRoutes waits until the node's wake-up service holds n stop
// routes (hook waiters) of agent.
func waitStopRoutes(t *testing.T, home, agent string, n int) {
	t.Helper()
	c := localapi.NewClient(node.SocketPath(home))
	defer c.Close()
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := c.WakeStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, w := range st {
			if w.Agent == agent {
				for _, r := range w.Routes {
					if r == localapi.WakeStop {
						got++
					}
				}
			}
		}
		return got == n
	}, fmt.Sprintf("%d stop routes of %s", n, agent))
}

type hookOut struct {
	HookSpecificOutput struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

func decodeHook(t *testing.T, out string) hookOut {
	t.Helper()
	var v hookOut
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("hook output is not JSON: %q: %v", out, err)
	}
	return v
}

// The hook commands, fed the clients' documented inputs, print the
// documented outputs: SessionStart binds the session, PostToolUse carries
// what is pending on a Bash call, the Stop waiter wakes the idle session for
// an ask (stderr, exit 2) and never again for nothing new, a newer waiter
// and a busy session end older ones; Codex's Stop continues the turn once;
// Gemini's AfterTool; malformed input is refused and loses nothing.
func TestHooksDocumentedShapes(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	proj := filepath.Join(t.TempDir(), "shop")
	hook := func(stdin string, client, event string) (string, string, int) {
		return runStdin(t, stdin, "--home", home, "hook", client, event)
	}
	in := func(event string, extra string) string {
		return `{"session_id":"sess-1","transcript_path":"/tmp/t.jsonl","cwd":"` + proj + `","permission_mode":"default","hook_event_name":"` + event + `"` + extra + `}`
	}

	// SessionStart binds the session; nothing is pending.
	out, errs, code := hook(in("SessionStart", `,"source":"startup"`), "claude", "SessionStart")
	if code != 0 || out != "" {
		t.Fatalf("SessionStart: exit %d, out %q, err %s", code, out, errs)
	}
	var agents []struct{ Name, Session string }
	runJSON(t, &agents, "--home", home, "agent", "list")
	if len(agents) != 1 || agents[0].Name != "claude-code-shop" || agents[0].Session != "sess-1" {
		t.Fatalf("agents after SessionStart: %+v", agents)
	}

	// An invitation rides on a Bash result, once.
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", home, "room", "create", "release", "--purpose", "ship it", "--member", "claude-code-shop")
	post := in("PostToolUse", `,"tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a"},"tool_use_id":"t1"`)
	out, errs, code = hook(post, "claude", "PostToolUse")
	if code != 0 {
		t.Fatalf("PostToolUse: exit %d: %s", code, errs)
	}
	v := decodeHook(t, out)
	if v.HookSpecificOutput.HookEventName != "PostToolUse" || !strings.Contains(v.HookSpecificOutput.AdditionalContext, "invited you") ||
		!strings.Contains(v.HookSpecificOutput.AdditionalContext, room.RoomID) {
		t.Fatalf("PostToolUse output: %+v", v)
	}
	if out, _, code = hook(post, "claude", "PostToolUse"); code != 0 || out != "" {
		t.Fatalf("second PostToolUse: exit %d, %q", code, out)
	}

	// The Stop waiter wakes the idle session for an ask: stderr, exit 2.
	stop := in("Stop", `,"stop_hook_active":false,"last_assistant_message":"done"`)
	w1 := startHook(t, stop, "--home", home, "hook", "claude", "Stop")
	w1.running(t)
	if _, errs, code := run(t, "--home", home, "room", "ask", room.RoomID, "which port does the shop use?", "--to", "claude-code-shop", "--wait", "0s"); code != 0 {
		t.Fatalf("ask: %s", errs)
	}
	if c := w1.exited(t, 30*time.Second); c != 2 || !strings.Contains(w1.stderr.String(), "which port does the shop use?") ||
		!strings.Contains(w1.stderr.String(), "parley_reply") {
		t.Fatalf("Stop waiter: exit %d, stderr %s", c, w1.stderr)
	}
	// Nothing new: the next waiter waits; a newer one supersedes it; a
	// busy session ends the newer one. The newer starts once the node has
	// the next one's route: started at once, it may come first (its
	// process ran sooner), and the next one would end it.
	w2 := startHook(t, in("Stop", `,"stop_hook_active":true`), "--home", home, "hook", "claude", "Stop")
	waitStopRoutes(t, home, "claude-code-shop", 1)
	w2.running(t)
	w3 := startHook(t, stop, "--home", home, "hook", "claude", "Stop")
	if c := w2.exited(t, 30*time.Second); c != 0 {
		t.Fatalf("superseded waiter: exit %d: %s", c, w2.stderr)
	}
	w3.running(t)
	if _, errs, code := hook(post, "claude", "PostToolUse"); code != 0 {
		t.Fatalf("PostToolUse: %s", errs)
	}
	if c := w3.exited(t, 30*time.Second); c != 0 || w3.stderr.String() != "" {
		t.Fatalf("waiter of a busy session: exit %d: %s", c, w3.stderr)
	}

	// Malformed input: a clear error, and the ask stays owed.
	if _, errs, code := run(t, "--home", home, "room", "ask", room.RoomID, "and the host?", "--to", "claude-code-shop", "--wait", "0s"); code != 0 {
		t.Fatalf("ask: %s", errs)
	}
	for _, bad := range []string{"", "{", `{"hook_event_name":"Stop"}`, in("Stop", ""), `{"session_id":7}`, strings.Repeat("[", 100000)} {
		_, errs, code := hook(bad, "claude", "PostToolUse")
		if code != 1 || !strings.Contains(errs, "hook input") {
			t.Fatalf("input %q: exit %d: %s", bad, code, errs)
		}
	}
	if _, errs, code := hook(post, "claude", "NoSuchEvent"); code != 1 || !strings.Contains(errs, "PostToolUse") {
		t.Fatalf("unknown event: exit %d: %s", code, errs)
	}
	if _, errs, code := runStdin(t, post, "--home", home, "hook", "claude", "PostToolUse", "extra"); code != 1 || !strings.Contains(errs, "stdin") {
		t.Fatalf("an argument to a stdin hook: exit %d: %s", code, errs)
	}
	out, errs, code = hook(post, "claude", "PostToolUse")
	if v := decodeHook(t, out); code != 0 || !strings.Contains(v.HookSpecificOutput.AdditionalContext, "and the host?") {
		t.Fatalf("the ask after malformed input: exit %d %+v %s", code, v, errs)
	}

	// Codex's Stop: a new ask continues the turn once.
	codex := `{"session_id":"thread-9","turn_id":"t1","cwd":"` + proj + `","hook_event_name":"Stop","model":"gpt-5","stop_hook_active":false}`
	if out, errs, code := runStdin(t, codex, "--home", home, "hook", "codex", "Stop"); code != 0 || out != "" {
		t.Fatalf("codex Stop with nothing: exit %d %q %s", code, out, errs)
	}
	runJSON(t, &room, "--home", home, "room", "create", "codex-room", "--member", "codex-shop")
	out, errs, code = runStdin(t, codex, "--home", home, "hook", "codex", "Stop")
	if v := decodeHook(t, out); code != 0 || v.Decision != "block" || !strings.Contains(v.Reason, "invited you") {
		t.Fatalf("codex Stop: exit %d %+v %s", code, v, errs)
	}
	if out, _, code := runStdin(t, codex, "--home", home, "hook", "codex", "Stop"); code != 0 || out != "" {
		t.Fatalf("codex Stop again: exit %d %q", code, out)
	}

	// Codex's notify (the JSON is the last argument; stdin is not read): the
	// thread is idle, and an ask no route can bring it is told to the human
	// at once, not after the wake limit (60 s here). Malformed input is
	// refused and the ask stays owed.
	if _, errs, code := run(t, "--home", home, "room", "ask", room.RoomID, "is the build green?", "--to", "codex-shop", "--wait", "0s"); code != 0 {
		t.Fatalf("ask: %s", errs)
	}
	notify := `{"type":"agent-turn-complete","thread-id":"thread-9","turn-id":"t2","cwd":"` + proj + `","client":"codex-tui",` +
		`"input-messages":["run the tests"],"last-assistant-message":"All green."}`
	for _, bad := range [][]string{nil, {"{"}, {`{"thread-id":"thread-9"}`}, {`{"type":"agent-turn-complete","cwd":"/x"}`}, {notify, "extra"}} {
		_, errs, code := runStdin(t, "", append([]string{"--home", home, "hook", "codex", "notify"}, bad...)...)
		if code != 1 || !strings.Contains(errs, "notif") && !strings.Contains(errs, "argument") {
			t.Fatalf("notify %q: exit %d: %s", bad, code, errs)
		}
	}
	if out, _, code := runStdin(t, "", "--home", home, "hook", "codex", "notify", `{"type":"approval-requested","thread-id":"thread-9"}`); code != 0 || out != "" {
		t.Fatalf("another notification: exit %d %q", code, out)
	}
	if out, _, _ := run(t, "--home", home, "who"); strings.Contains(out, "NOT REACHED") {
		t.Fatalf("told before the thread was idle:\n%s", out)
	}
	if out, errs, code := runStdin(t, "not JSON, and not read", "--home", home, "hook", "codex", "notify", notify); code != 0 || out != "" {
		t.Fatalf("codex notify: exit %d %q %s", code, out, errs)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ := run(t, "--home", home, "who")
		st, _, _ := run(t, "--home", home, "status")
		return strings.Contains(out, "NOT REACHED: 1") && strings.Contains(st, "agents not reached: 1")
	}, "parley who and status to tell the human of the idle Codex thread's ask")
	// The agent works again: its next tool result carries the ask, and the mark goes.
	codexPost := `{"session_id":"thread-9","turn_id":"t3","cwd":"` + proj + `","hook_event_name":"PostToolUse","model":"gpt-5","tool_name":"Bash","tool_input":{"command":"make"},"tool_response":"ok","tool_use_id":"c1"}`
	out, errs, code = runStdin(t, codexPost, "--home", home, "hook", "codex", "PostToolUse")
	if v := decodeHook(t, out); code != 0 || v.HookSpecificOutput.HookEventName != "PostToolUse" || !strings.Contains(v.HookSpecificOutput.AdditionalContext, "is the build green?") {
		t.Fatalf("codex PostToolUse: exit %d %+v %s", code, v, errs)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ := run(t, "--home", home, "who")
		return !strings.Contains(out, "NOT REACHED")
	}, "the mark to go once the Codex agent read")

	// SessionStart with something owed (a resumed session): the context
	// carries it.
	runJSON(t, &room, "--home", home, "room", "create", "later", "--member", "claude-code-shop")
	out, errs, code = hook(in("SessionStart", `,"source":"resume","model":"claude-sonnet-4-5"`), "claude", "SessionStart")
	if v := decodeHook(t, out); code != 0 || v.HookSpecificOutput.HookEventName != "SessionStart" || !strings.Contains(v.HookSpecificOutput.AdditionalContext, room.RoomID) {
		t.Fatalf("SessionStart with an invitation: exit %d %+v %s", code, v, errs)
	}

	// Gemini's AfterTool.
	gem := `{"session_id":"g-1","transcript_path":"/tmp/g.json","cwd":"` + proj + `","hook_event_name":"AfterTool","timestamp":"2026-01-01T00:00:00Z","tool_name":"run_shell_command","tool_input":{},"tool_response":{}}`
	if out, _, code := runStdin(t, gem, "--home", home, "hook", "gemini", "AfterTool"); code != 0 || out != "" {
		t.Fatalf("gemini AfterTool with nothing: %d %q", code, out)
	}
	runJSON(t, &room, "--home", home, "room", "create", "gem-room", "--member", "gemini-cli-shop")
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		out, _, code := runStdin(t, gem, "--home", home, "hook", "gemini", "AfterTool")
		v := hookOut{}
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			return false
		}
		return v.HookSpecificOutput.HookEventName == "AfterTool" && strings.Contains(v.HookSpecificOutput.AdditionalContext, "invited you")
	}, "Gemini's AfterTool context")
}

func FuzzHookInput(f *testing.F) {
	for _, s := range []string{`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash"}`, `{"session_id":""}`, `{`, `[]`,
		`{"session_id":"s","hook_event_name":"Stop","stop_hook_active":"yes"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := parseHookInput(raw, "claude", "PostToolUse")
		if err != nil {
			return
		}
		if in.SessionID == "" || len(in.SessionID) > 256 || in.HookEventName != "" && !strings.EqualFold(in.HookEventName, "PostToolUse") {
			t.Fatalf("accepted %+v", in)
		}
	})
}

func FuzzCodexNotify(f *testing.F) {
	for _, s := range []string{`{"type":"agent-turn-complete","thread-id":"t","turn-id":"1","cwd":"/x","input-messages":["a"],"last-assistant-message":null}`,
		`{"type":"approval-requested"}`, `{"type":"agent-turn-complete"}`, `{`, `[]`, `{"type":7}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		in, ok, err := parseCodexNotify(arg)
		if err != nil || !ok {
			if ok || in.SessionID != "" {
				t.Fatalf("refused or skipped, yet %+v %v", in, ok)
			}
			return
		}
		if in.SessionID == "" || len(in.SessionID) > 256 || in.HookEventName != "notify" {
			t.Fatalf("accepted %+v", in)
		}
	})
}
