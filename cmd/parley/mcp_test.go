package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node/nodetest"
)

// mcpClient starts `parley mcp` for home and connects the MCP Go SDK's
// client to it over stdio, as an agent's client program does.
func mcpClient(t *testing.T, home, session string) *sdk.ClientSession {
	t.Helper()
	return mcpClientErr(t, home, session, os.Stderr)
}

// mcpClientErr is mcpClient with the process's stderr going to stderr.
func mcpClientErr(t *testing.T, home, session string, stderr io.Writer) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(parleyBin, "--home", home, "mcp", "--session", session, "--client", "test", "--project", "/src/"+session)
	cmd.Stderr = stderr
	c := sdk.NewClient(&sdk.Implementation{Name: "parley-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to parley mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolResult is a tool call's structured output and text.
type toolResult struct {
	Out  map[string]any
	Text string
	Err  bool
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) toolResult {
	t.Helper()
	r, err := tryTool(cs, name, args)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryTool is callTool for a goroutine other than the test's: it returns
// what callTool fails on.
func tryTool(cs *sdk.ClientSession, name string, args map[string]any) (toolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return toolResult{}, fmt.Errorf("%s: %v", name, err)
	}
	var r toolResult
	r.Err = res.IsError
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			r.Text += tc.Text
		}
	}
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &r.Out)
	if r.Out == nil {
		return r, fmt.Errorf("%s returned no structured content: %s", name, r.Text)
	}
	if _, ok := r.Out["pending"]; !ok {
		return r, fmt.Errorf("%s result has no pending list: %s", name, raw)
	}
	return r, nil
}

func (r toolResult) str(k string) string { s, _ := r.Out[k].(string); return s }

func (r toolResult) pending() []map[string]any {
	var out []map[string]any
	for _, p := range r.Out["pending"].([]any) {
		out = append(out, p.(map[string]any))
	}
	return out
}

// befriend makes the nodes of homeA and homeB contacts.
func befriend(t testing.TB, homeA, homeB, idB string) {
	t.Helper()
	if _, errs, code := run(t, "--home", homeA, "contact", "request", idB, "--json"); code != 0 {
		t.Fatalf("contact request: %s", errs)
	}
	var id string
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		for _, c := range contactsOf(t, homeB) {
			if c.State == "pending-in" {
				id = c.ID
				return true
			}
		}
		return false
	}, "the request to reach B")
	if _, errs, code := run(t, "--home", homeB, "contact", "approve", id); code != 0 {
		t.Fatalf("contact approve: %s", errs)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { return stateOf(t, homeA, idB) == "active" }, "the contact to be active")
}

func TestMCPAskAcrossTwoNodes(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	var idB struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &idB, "--home", homeB, "id")
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		var peers []map[string]any
		runJSON(t, &peers, "--home", homeA, "peers")
		return len(peers) == 1
	}, "A and B to connect")
	befriend(t, homeA, homeB, idB.PeerID)

	c1 := mcpClient(t, homeA, "s1")
	c2 := mcpClient(t, homeB, "s2")

	// The tools are listed with descriptions and schemas.
	tl, err := c1.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s lacks a description or schema", tool.Name)
		}
	}
	for _, want := range []string{"parley_register", "parley_who", "parley_find", "parley_room_open", "parley_invite",
		"parley_say", "parley_read", "parley_ask", "parley_wait", "parley_reply", "parley_leave"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s missing (have %v)", want, names)
		}
	}

	r1 := callTool(t, c1, "parley_register", map[string]any{"name": "agent1", "role": "asker"})
	r2 := callTool(t, c2, "parley_register", map[string]any{"name": "agent2", "working_on": "the parser"})
	if r1.str("agent") != "agent1" || r2.str("address") != "agent2@"+idB.PeerID {
		t.Fatalf("register: %v / %v", r1.Out, r2.Out)
	}
	open := callTool(t, c1, "parley_room_open", map[string]any{"name": "pair", "members": []string{r2.str("address")}})
	room := open.str("room_id")
	if open.Err || room == "" {
		t.Fatalf("room_open: %s", open.Text)
	}

	// Agent 1 asks and blocks.
	asked := make(chan toolResult, 1)
	go func() {
		asked <- callTool(t, c1, "parley_ask", map[string]any{"to": r2.str("address"), "room": room, "text": "what is 6 times 7?", "wait_seconds": 45})
	}()

	// Agent 2 calls an unrelated tool and finds the ask on top, marked.
	var ask map[string]any
	var text string
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		r := callTool(t, c2, "parley_who", nil)
		for _, p := range r.pending() {
			if p["kind"] == "ask" && strings.Contains(p["text"].(string), "6 times 7") {
				ask, text = p, r.Text
				return true
			}
		}
		return false
	}, "the ask to ride along in agent 2's tool result")
	if !strings.Contains(text, mcp.Marker) || !strings.Contains(text, "parley_reply") {
		t.Fatalf("the result text does not say someone is blocked and how to answer:\n%s", text)
	}
	if ask["room"] != room || !strings.HasPrefix(ask["from"].(string), "agent1@") {
		t.Fatalf("ask item = %v", ask)
	}
	// The text names agents by handle; the structured output keeps addresses.
	if !strings.Contains(text, "agent1@alice") || strings.Contains(text, ask["from"].(string)) {
		t.Fatalf("the ask's text does not name its asker agent1@alice:\n%s", text)
	}
	// It is shown in full once, then as a reminder until answered.
	again := callTool(t, c2, "parley_who", nil)
	if ps := again.pending(); len(ps) != 1 || ps[0]["id"] != ask["id"] || ps[0]["kind"] != "reminder" {
		t.Fatalf("after the first showing: %v", ps)
	}
	rep := callTool(t, c2, "parley_reply", map[string]any{"message_id": ask["id"], "text": "42"})
	if rep.Err {
		t.Fatalf("reply: %s", rep.Text)
	}
	select {
	case res := <-asked:
		reply, _ := res.Out["reply"].(map[string]any)
		if reply == nil || reply["text"] != "42" || !strings.HasPrefix(reply["from"].(string), "agent2@") {
			t.Fatalf("ask returned %v\n%s", res.Out, res.Text)
		}
		if !strings.Contains(res.Text, "Reply from agent2@bob") {
			t.Fatalf("the reply's text does not name agent2@bob:\n%s", res.Text)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("parley_ask did not return the reply")
	}
	// Answered, it is not unread; it is still in the room's last events.
	if rd := callTool(t, c2, "parley_read", map[string]any{"room": room}); strings.Contains(rd.Text, "6 times 7") {
		t.Fatalf("parley_read lists the answered ask as unread: %s", rd.Text)
	}
	rd := callTool(t, c2, "parley_read", map[string]any{"room": room, "last": 20})
	if !strings.Contains(rd.Text, "6 times 7") {
		t.Fatalf("parley_read's last events lack the ask: %s", rd.Text)
	}

	// An ask that times out, then parley_wait gets the late reply.
	slow := callTool(t, c1, "parley_ask", map[string]any{"to": r2.str("address"), "room": room, "text": "slow one?", "wait_seconds": 1})
	askID := slow.str("ask_id")
	if slow.Out["reply"] != nil || askID == "" || !strings.Contains(slow.Text, "parley_wait") {
		t.Fatalf("timed-out ask: %v\n%s", slow.Out, slow.Text)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		for _, p := range callTool(t, c2, "parley_read", map[string]any{"room": room}).pending() {
			if p["id"] == askID {
				callTool(t, c2, "parley_reply", map[string]any{"message_id": askID, "text": "late answer"})
				return true
			}
		}
		return false
	}, "the slow ask to reach agent 2")
	w := callTool(t, c1, "parley_wait", map[string]any{"ask_id": askID, "wait_seconds": 30})
	if reply, _ := w.Out["reply"].(map[string]any); reply == nil || reply["text"] != "late answer" {
		t.Fatalf("parley_wait: %v\n%s", w.Out, w.Text)
	}

	// Bad input is a tool error that says what to do, with pending attached.
	bad := callTool(t, c1, "parley_say", map[string]any{"room": "nosuchroom", "text": "x"})
	if !bad.Err || !strings.Contains(bad.Text, "parley room list") && !strings.Contains(bad.Text, "no room") {
		t.Fatalf("say in unknown room: %s", bad.Text)
	}
	if bad := callTool(t, c1, "parley_ask", map[string]any{"text": "hi"}); !bad.Err || !strings.Contains(bad.Text, "to (NAME@PEER_ID") {
		t.Fatalf("ask without addressee: %s", bad.Text)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		var who []struct {
			PeerID string `json:"peer_id"`
			Agent  string `json:"agent"`
		}
		runJSON(t, &who, "--home", homeA, "who")
		return slices.ContainsFunc(who, func(w struct {
			PeerID string `json:"peer_id"`
			Agent  string `json:"agent"`
		}) bool {
			return w.PeerID == idB.PeerID && w.Agent == "agent2"
		})
	}, "A to see agent2 alive on B")
	// B's agents are visible to A (contacts see presence): an agent that
	// is not there is an error, not a silent wait.
	// An address as the texts show it, NAME@HANDLE, is taken.
	if r := callTool(t, c1, "parley_say", map[string]any{"room": room, "to": "agent2@bob", "text": "by handle"}); r.Err {
		t.Fatalf("say to agent2@bob: %s", r.Text)
	}
	if bad := callTool(t, c1, "parley_say", map[string]any{"room": room, "to": "agent2@nobody", "text": "x"}); !bad.Err || !strings.Contains(bad.Text, "nobody") {
		t.Fatalf("say to an unknown handle: %s", bad.Text)
	}
	if bad := callTool(t, c1, "parley_ask", map[string]any{"to": "nobody@" + idB.PeerID, "room": room, "text": "hello?", "wait_seconds": 1}); !bad.Err || !strings.Contains(bad.Text, "parley_who") {
		t.Fatalf("ask of a missing agent: %s", bad.Text)
	}
}

func TestMCPStartsANode(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if _, _, code := run(t, "--home", home, "status"); code == 0 {
		t.Fatal("a node runs before the test started one")
	}
	stderr := &syncBuffer{}
	cs := mcpClientErr(t, home, "solo", stderr)
	t.Cleanup(func() { run(t, "--home", home, "down") })
	r := callTool(t, cs, "parley_register", map[string]any{})
	if r.Err || !strings.HasPrefix(r.str("agent"), "test-solo") {
		t.Fatalf("register on the started node: %v %s", r.Out, r.Text)
	}
	var info struct {
		Addrs []string `json:"addrs"`
	}
	runJSON(t, &info, "--home", home, "id")
	if len(info.Addrs) == 0 {
		t.Fatal("the started node has no addresses")
	}
	for _, a := range info.Addrs {
		if !strings.HasPrefix(a, "/ip4/127.0.0.1/") {
			t.Errorf("the node parley mcp started listens on %s, not on loopback only", a)
		}
	}
	var st struct {
		MDNS bool `json:"mdns"`
	}
	runJSON(t, &st, "--home", home, "status")
	if st.MDNS {
		t.Error("the node parley mcp started runs mDNS")
	}
	// One line on stderr says what was started and how to stop it. It is
	// written before the MCP server answers, but the test reads stderr on
	// a goroutine of its own: wait for it.
	nodetest.WaitFor(t, 10*time.Second, func() bool { return strings.Contains(stderr.String(), "started a node") },
		"parley mcp to say it started a node: stderr %q", stderr.String())
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "started a node") || !strings.Contains(lines[0], info.Addrs[0]) ||
		!strings.Contains(lines[0], "parley --home "+home+" down") {
		t.Fatalf("parley mcp's stderr after starting a node: %q", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(home, "node.log")); err != nil {
		t.Fatalf("node log: %v", err)
	}
}

// Several `parley mcp` started at once on a home with no node (the sessions
// a person opens after a reboot, a client starting its servers in
// parallel): one starts the node, the others wait for it and use it (they
// failed with "home is in use by a running node": its socket was not open
// yet when they looked).
func TestMCPStartedAtOnceShareOneNode(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	t.Cleanup(func() { run(t, "--home", home, "down") })
	const n = 4
	type result struct {
		cs     *sdk.ClientSession
		err    error
		stderr *syncBuffer
	}
	results := make(chan result, n)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range n {
		go func() {
			session := fmt.Sprintf("race%d", i)
			cmd := exec.Command(parleyBin, "--home", home, "mcp", "--session", session, "--client", "test", "--project", "/src/"+session)
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			c := sdk.NewClient(&sdk.Implementation{Name: "parley-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			results <- result{cs, err, stderr}
		}()
	}
	started := 0
	for range n {
		r := <-results
		if r.err != nil {
			t.Errorf("a parley mcp started beside others failed: %v\nstderr: %s", r.err, r.stderr)
			continue
		}
		t.Cleanup(func() { r.cs.Close() })
		if res := callTool(t, r.cs, "parley_who", map[string]any{}); res.Err {
			t.Errorf("parley_who: %s", res.Text)
		}
		started += strings.Count(r.stderr.String(), "started a node")
	}
	if started != 1 {
		t.Errorf("%d of the parley mcp said they started a node, want 1", started)
	}
}
