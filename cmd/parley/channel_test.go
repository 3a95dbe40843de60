package main

import (
	"bufio"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// A real `parley mcp` session of Claude Code declares claude/channel and
// pushes each owed item once, as notifications/claude/channel (one per
// wake: the items handed at once are one notification); an item not
// read within the wake limit, with no route left, is told to the human
// (parley who, parley status) until the agent reads it.
func TestMCPChannelPushesOncePerItem(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback, "--wake-limit", "1s")
	proc := startMCPProcess(t, home, "--session", "chan-1", "--client", "claude-code",
		"--project", filepath.Join(t.TempDir(), "shop"))
	stdin, stdout := proc.stdin, proc.stdout
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Params struct {
			Content string            `json:"content"`
			Meta    map[string]string `json:"meta"`
		} `json:"params"`
	}
	lines := make(chan msg, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			var m msg
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
		close(lines)
	}()
	next := func(within time.Duration) (msg, bool) {
		select {
		case m, ok := <-lines:
			return m, ok
		case <-time.After(within):
			return msg{}, false
		}
	}
	write := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2"}}}`)
	init, ok := next(30 * time.Second)
	if !ok || !strings.Contains(string(init.Result), `"experimental":{"claude/channel":{}}`) {
		t.Fatalf("initialize: %+v", init)
	}
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", home, "room", "create", "release", "--member", "claude-code-shop")
	var ask struct {
		AskID string `json:"ask_id"`
	}
	runJSON(t, &ask, "--home", home, "room", "ask", room.RoomID, "which port?", "--to", "claude-code-shop", "--wait", "0s")
	var id struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &id, "--home", home, "id")
	// The invitation the room's creation made and the ask, two items (the
	// ask did not bring the agent in: it was a member already): each
	// pushed once.
	got := map[string]int{}
	invited := func() bool {
		for k := range got {
			if strings.HasPrefix(k, "invitation ") {
				return true
			}
		}
		return false
	}
	for got["ask "+ask.AskID] == 0 || !invited() {
		m, ok := next(30 * time.Second)
		if !ok {
			t.Fatalf("channel notifications so far: %v", got)
		}
		if m.Method != "notifications/claude/channel" {
			t.Fatalf("unexpected message %+v", m)
		}
		key := m.Params.Meta["kind"] + " " + m.Params.Meta["item_id"]
		if got[key]++; got[key] > 1 {
			t.Fatalf("%s pushed twice", key)
		}
		if m.Params.Meta["kind"] == "ask" && strings.Contains(m.Params.Content, "invited you into room") {
			// Both handed in one wake: one notification, the ask in full,
			// the invitation a line after it.
			got["invitation (a line of the ask's)"]++
		}
		if m.Params.Meta["room_id"] != room.RoomID || m.Params.Content == "" {
			t.Fatalf("notification %+v", m)
		}
		if strings.Contains(m.Params.Content, "@"+id.PeerID) {
			t.Fatalf("the push writes agents NAME@PEER_ID, not NAME@handle: %s", m.Params.Content)
		}
		if m.Params.Meta["kind"] == "ask" && (m.Params.Meta["item_id"] != ask.AskID || !strings.Contains(m.Params.Content, "which port?")) {
			t.Fatalf("ask notification %+v", m)
		}
	}
	// Not read, and no route left: no second push; the human is told.
	if m, ok := next(3 * time.Second); ok {
		t.Fatalf("a second notification: %+v", m)
	}
	var out, st string
	if !nodetest.Poll(20*time.Second, func() bool {
		out, _, _ = run(t, "--home", home, "who")
		st, _, _ = run(t, "--home", home, "status")
		// Two: the invitation and the ask.
		return strings.Contains(out, "NOT REACHED: 2") && strings.Contains(st, "agents not reached: 2")
	}) {
		t.Fatalf("parley who and status do not tell the human of the two items not read:\n%s\n%s", out, st)
	}
	// The agent reads (any Parley tool result hands the items out).
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"parley_who","arguments":{}}}`)
	if m, ok := next(30 * time.Second); !ok || string(m.ID) != "2" || !strings.Contains(string(m.Result), "which port?") {
		t.Fatalf("tool result: %+v", m)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ := run(t, "--home", home, "who")
		return strings.Contains(out, "claude-code-shop") && !strings.Contains(out, "NOT REACHED")
	}, "the mark to go once the agent read")

	// The agent takes a name of its own: pushes follow it at once, not
	// once the wait under its old name ends (up to 50 s).
	write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"parley_register","arguments":{"name":"shipper"}}}`)
	if m, ok := next(30 * time.Second); !ok || string(m.ID) != "3" || !strings.Contains(string(m.Result), "shipper") {
		t.Fatalf("register: %+v", m)
	}
	var ask2 struct {
		AskID string `json:"ask_id"`
	}
	runJSON(t, &ask2, "--home", home, "room", "ask", room.RoomID, "and the host?", "--to", "shipper", "--wait", "0s")
	for {
		m, ok := next(10 * time.Second)
		if !ok {
			t.Fatal("no push of the ask to the renamed agent within 10 s")
		}
		if m.Method == "notifications/claude/channel" && m.Params.Meta["item_id"] == ask2.AskID {
			break
		}
	}
}
