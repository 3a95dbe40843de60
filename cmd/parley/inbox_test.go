package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestInboxShowsTheHumanItsAsks: an agent asks this node's human; parley
// status says something waits, parley inbox lists the ask with the
// command that answers it, and that command's answer reaches the agent,
// after which the ask is gone from the inbox.
func TestInboxShowsTheHumanItsAsks(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	if out, _, code := run(t, "--home", home, "inbox"); code != 0 || !strings.Contains(out, "nothing waits for you") {
		t.Fatalf("an empty inbox: %d %q", code, out)
	}
	cs := mcpClient(t, home, "asker")
	// An invitation of another agent waits too: status counts both, each
	// by its name.
	if res, err := mcpClient(t, home, "inviter").CallTool(context.Background(), &sdk.CallToolParams{Name: "parley_room_open",
		Arguments: map[string]any{"name": "plans", "members": []string{"human"}}}); err != nil || res.IsError {
		t.Fatalf("room_open: %v %+v", err, res)
	}
	type answer struct {
		text string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "parley_ask",
			Arguments: map[string]any{"to": "human", "text": "may I drop the old API?", "wait_seconds": 50}})
		a := answer{err: err}
		if res != nil {
			for _, c := range res.Content {
				if tc, ok := c.(*sdk.TextContent); ok {
					a.text += tc.Text
				}
			}
		}
		got <- a
	}()

	var out string
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _, _ = run(t, "--home", home, "status")
		return strings.Contains(out, "waiting for you: 1 ask and 1 invitation (parley inbox shows them)")
	}, "status to say an ask and an invitation wait; last said:\n%s", out)
	// The ask brought the human into a room of the two: that is shown as
	// part of the ask, not as an invitation of its own.
	out, errs, code := run(t, "--home", home, "inbox")
	m := regexp.MustCompile(`answer: parley room say (\S+) "…" --reply-to (\S+)`).FindStringSubmatch(out)
	if code != 0 || !strings.Contains(out, "ASK") || !strings.Contains(out, "may I drop the old API?") || m == nil ||
		!strings.Contains(out, "it brought you into") || strings.Count(out, "INVITATION") != 1 || !strings.Contains(out, `INVITATION from test-inviter@`) ||
		!strings.Contains(out, `to "plans"`) {
		t.Fatalf("the inbox: %d %q %s", code, out, errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "say", m[1], "yes, after the release", "--reply-to", m[2]); code != 0 {
		t.Fatalf("the answer: %s", errs)
	}
	select {
	case a := <-got:
		if a.err != nil || !strings.Contains(a.text, "yes, after the release") {
			t.Fatalf("the agent's ask: %v %q", a.err, a.text)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the agent's ask did not return")
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _, _ = run(t, "--home", home, "inbox")
		return !strings.Contains(out, "ASK")
	}, "the answered ask to leave the inbox")
	if out, _, _ := run(t, "--home", home, "status"); !strings.Contains(out, "waiting for you: 1 invitation (parley inbox shows it)") {
		t.Fatalf("status after the answer: %s", out)
	}
	run(t, "--home", home, "inbox", "--take")
	if out, _, _ := run(t, "--home", home, "status"); strings.Contains(out, "waiting for you") {
		t.Fatalf("status after the inbox was taken: %s", out)
	}
}

// TestInboxHintsActAsTheAgent: the commands parley inbox --as AGENT shows
// act as AGENT: the answer it gives, pasted, is AGENT's, not human's.
func TestInboxHintsActAsTheAgent(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "agent", "register", "coder"); code != 0 {
		t.Fatal(errs)
	}
	runJSON(t, &struct{}{}, "--home", home, "room", "create", "design")
	if _, errs, code := run(t, "--home", home, "room", "ask", "design", "which port?", "--to", "coder", "--wait", "0s"); code != 0 {
		t.Fatal(errs)
	}
	var out string
	hint := regexp.MustCompile(`answer: parley room say \S+ "…" --reply-to \S+ --as coder\n`)
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _, _ = run(t, "--home", home, "inbox", "--as", "coder")
		return hint.MatchString(out)
	}, "coder's inbox to show the ask with a command that answers as coder")
	if !strings.Contains(out, "leave it: parley room leave ") || !strings.Contains(out, " --as coder\n") {
		t.Fatalf("coder's invitation: %q", out)
	}
	// The hint pasted as it is, with the text in place of "…".
	pasted := []string{"--home", home}
	for _, f := range strings.Fields(regexp.MustCompile(`answer: parley (.*)\n`).FindStringSubmatch(out)[1]) {
		pasted = append(pasted, strings.ReplaceAll(f, `"…"`, "8080"))
	}
	if _, errs, code := run(t, pasted...); code != 0 {
		t.Fatalf("the answer %q: %s", pasted, errs)
	}
	l := roomLog(t, home, "design")
	if last := l[len(l)-1]; last.Text != "8080" || last.Agent != "coder" {
		t.Fatalf("the answer is %+v", last)
	}
	if out, _, _ := run(t, "--home", home, "inbox"); strings.Contains(out, "--as") {
		t.Fatalf("human's inbox shows --as: %q", out)
	}
}

// TestInboxShowsARemoval: an agent the room's creator took out is told
// which room and who did it, and the invitation it had not taken yet is
// gone.
func TestInboxShowsARemoval(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback)
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr())
	idB := peerID(t, homeB)
	befriend(t, homeA, homeB, idB)
	if _, errs, code := run(t, "--home", homeB, "agent", "register", "coder"); code != 0 {
		t.Fatal(errs)
	}
	runJSON(t, &struct{}{}, "--home", homeA, "room", "create", "design")
	if _, errs, code := run(t, "--home", homeA, "room", "invite", "design", "coder@"+idB); code != 0 {
		t.Fatal(errs)
	}
	var out string
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _, _ = run(t, "--home", homeB, "inbox", "--as", "coder")
		return strings.Contains(out, `INVITATION from human@`) && strings.Contains(out, `to "design"`)
	}, "coder's invitation")
	if _, errs, code := run(t, "--home", homeA, "room", "remove", "design", "coder@"+idB); code != 0 {
		t.Fatal(errs)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _, _ = run(t, "--home", homeB, "inbox", "--as", "coder")
		return strings.Contains(out, "REMOVED")
	}, "coder to be told of its removal")
	if !regexp.MustCompile(`REMOVED from "design" by human@\S+: `).MatchString(out) || strings.Contains(out, "INVITATION") {
		t.Fatalf("coder's inbox once removed: %q", out)
	}
}

// TestStatusCountsUnreachedInWords: an ask no wake-up route got its agent
// to read in time is counted by parley status in a sentence that agrees
// with its number (before: "1 owed items were").
func TestStatusCountsUnreachedInWords(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback, "--wake-limit", "1s")
	if _, errs, code := run(t, "--home", home, "agent", "register", "coder"); code != 0 {
		t.Fatal(errs)
	}
	runJSON(t, &struct{}{}, "--home", home, "room", "create", "design")
	if _, errs, code := run(t, "--home", home, "room", "ask", "design", "which port?", "--to", "coder", "--wait", "0s"); code != 0 {
		t.Fatal(errs)
	}
	var out string
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _, _ = run(t, "--home", home, "status")
		return strings.Contains(out, "agents not reached")
	}, "status to count the ask coder was not reached with")
	if !strings.Contains(out, "agents not reached: 1 owed item was not read in time") {
		t.Fatalf("status: %s", out)
	}
}

// TestInboxAsHumanInCapitalsShowsContactRequests: `parley inbox --as
// HUMAN` (or "Human", " human") is human's inbox, as the node reads the
// name, with the contact requests that wait for the user, plain and
// --json alike. Before, the CLI compared the flag with "human" as typed,
// left them out, and said "nothing waits for you" while one did.
func TestInboxAsHumanInCapitalsShowsContactRequests(t *testing.T) {
	t.Parallel()
	homeA, homeB, _ := twoNodes(t)
	idA := peerID(t, homeA)
	if _, errs, code := run(t, "--home", homeB, "contact", "request", idA); code != 0 {
		t.Fatalf("contact request: %s", errs)
	}
	requests := func(as string) int {
		out, errs, code := run(t, "--home", homeA, "inbox", "--as", as, "--json")
		if code != 0 {
			t.Fatalf("inbox --as %q: exit %d: %s", as, code, errs)
		}
		var v struct {
			ContactRequests []json.RawMessage `json:"contact_requests"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("inbox --as %q --json: %q: %v", as, out, err)
		}
		return len(v.ContactRequests)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { return requests("human") == 1 }, "the request to reach A")
	for _, as := range []string{"HUMAN", "Human", " human"} {
		if n := requests(as); n != 1 {
			t.Errorf("inbox --as %q --json: %d contact requests, want the 1 that `inbox --as human` shows", as, n)
		}
		out, _, _ := run(t, "--home", homeA, "inbox", "--as", as)
		if !strings.Contains(out, "CONTACT REQUEST") {
			t.Errorf("inbox --as %q: %q, want the contact request", as, out)
		}
	}
}

// TestGivenAgentFoldsAsTheNodeDoes: the CLI's own comparisons of --as and
// $PARLEY_AGENT (inbox, guard, worktree remove) read the name as the node
// reads it: trimmed, A to Z folded, and nothing else (a Kelvin sign stays,
// for the node to refuse), without importing the node's identity package.
func TestGivenAgentFoldsAsTheNodeDoes(t *testing.T) {
	for in, want := range map[string]string{"HUMAN": "human", " Human ": "human", "Coder": "coder", "": "", "a b": "a b", "\u212aate": "\u212aate", "BOT\u212a": "bot\u212a"} {
		if got := givenAgent(in); got != want {
			t.Errorf("givenAgent(%q) = %q, want %q", in, got, want)
		}
	}
}

// An agent's empty inbox, read by its user with --as, names the agent:
// "nothing waits for you" read as the user's own.
func TestInboxOfAnAgentWithNothingNamesTheAgent(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "agent", "register", "reviewer"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	if out, errs, code := run(t, "--home", home, "inbox", "--as", "reviewer"); code != 0 || strings.TrimSpace(out) != "nothing waits for reviewer" {
		t.Fatalf("reviewer's empty inbox: exit %d, %q %q", code, out, errs)
	}
	if out, _, code := run(t, "--home", home, "inbox", "--as", "HUMAN"); code != 0 || strings.TrimSpace(out) != "nothing waits for you" {
		t.Fatalf("the user's empty inbox: exit %d, %q", code, out)
	}
}
