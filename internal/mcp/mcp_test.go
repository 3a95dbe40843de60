package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// connect serves Parley's MCP tools for a session of node i and returns a
// go-sdk client session on it (in-memory transport).
func connect(tb testing.TB, nt *nodetest.Net, i int, session string) *sdk.ClientSession {
	tb.Helper()
	return connectBeat(tb, nt, i, session, 0) // the default heartbeat
}

// try calls a tool and returns its structured output, its text and whether
// it is a tool error; a protocol error (an output that fails its schema)
// fails the test.
func try(tb testing.TB, cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, string, bool) {
	tb.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	raw, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	if err != nil {
		tb.Fatalf("%s: structured content: %v", name, err)
	}
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	return out, text, res.IsError
}

// call is try for a call that must succeed.
func call(tb testing.TB, cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, string) {
	tb.Helper()
	out, text, isErr := try(tb, cs, name, args)
	if isErr {
		tb.Fatalf("%s failed: %s", name, text)
	}
	return out, text
}

func twoAgents(tb testing.TB) (nt *nodetest.Net, a, b *sdk.ClientSession, room string) {
	nt = nodetest.Start(tb, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		c.AgentPostLimit = -1 // the benchmark posts as fast as it can
	}))
	nt.WaitFor(20*time.Second, func() bool {
		return nt.Node(0).Host().Network().Connectedness(nt.ID(1)) == network.Connected
	}, "the nodes to connect")
	a, b = connect(tb, nt, 0, "a"), connect(tb, nt, 1, "b")
	call(tb, a, "parley_register", map[string]any{"name": "alpha"})
	rb, _ := call(tb, b, "parley_register", map[string]any{"name": "beta"})
	out, _ := call(tb, a, "parley_room_open", map[string]any{"name": "bench", "members": []string{rb["address"].(string)}})
	room = out["room_id"].(string)
	if failed := out["failed"].([]any); len(failed) > 0 {
		tb.Fatalf("room_open: %v", failed)
	}
	nodetest.WaitFor(tb, 20*time.Second, func() bool {
		_, _, isErr := try(tb, b, "parley_read", map[string]any{"room": room})
		return !isErr
	}, "B to have the room")
	return nt, a, b, room
}

// TestPendingItemsOncePerAgent checks the piggy-back across agents of two
// nodes: a message for the room reaches the other agent once, in order,
// and the text is there for parley_read too.
func TestPendingItemsOncePerAgent(t *testing.T) {
	_, a, b, room := twoAgents(t)
	for k := range 3 {
		call(t, a, "parley_say", map[string]any{"room": room, "text": fmt.Sprintf("note %d", k)})
	}
	// Other items (the invitation) may come with the notes: count the notes.
	var seen, notes []string
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _ := call(t, b, "parley_register", nil)
		for _, p := range out["pending"].([]any) {
			text := p.(map[string]any)["text"].(string)
			seen = append(seen, text)
			if strings.HasPrefix(text, "note") {
				notes = append(notes, text)
			}
		}
		return len(notes) >= 3
	}, "the notes to reach beta")
	want := []string{"note 0", "note 1", "note 2"}
	if !slices.Equal(notes, want) {
		t.Fatalf("beta got %v, want %v exactly once each", seen, want)
	}
}

// shows reports whether a result shows a message with text, among the
// messages read or the pending items (a message that arrives while the
// read runs is handed out with the pending items).
func shows(out map[string]any, text string) bool {
	for _, k := range []string{"messages", "pending"} {
		list, _ := out[k].([]any)
		for _, m := range list {
			if m.(map[string]any)["text"] == text {
				return true
			}
		}
	}
	return false
}

// BenchmarkSayToRead measures parley_say on node A until the message shows
// in parley_read on node B, both through MCP: p50 and p99 in ms.
func BenchmarkSayToRead(b *testing.B) {
	_, ca, cb, room := twoAgents(b)
	call(b, cb, "parley_read", map[string]any{"room": room, "limit": 500})
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		text := fmt.Sprintf("m%d", i)
		start := time.Now()
		call(b, ca, "parley_say", map[string]any{"room": room, "text": text})
		for {
			out, _ := call(b, cb, "parley_read", map[string]any{"room": room})
			if shows(out, text) {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// An agent answers and waits on a message by the first 8 characters of its
// ID, as a room's log shows them; too few characters, or a prefix no event
// has, is a tool error that says so.
func TestReplyAndWaitByShortID(t *testing.T) {
	_, a, b, room := twoAgents(t)
	out, _ := call(t, a, "parley_ask", map[string]any{"room": room, "text": "ship it?", "wait_seconds": 1})
	askID := out["ask_id"].(string)
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		_, text, isErr := try(t, b, "parley_reply", map[string]any{"message_id": askID[:8], "text": "shipped"})
		return !isErr && text != ""
	}, "beta to answer the ask by its short ID")
	got, _ := call(t, a, "parley_wait", map[string]any{"ask_id": askID[:10], "wait_seconds": 20})
	reply, _ := got["reply"].(map[string]any)
	if reply == nil || reply["text"] != "shipped" {
		t.Fatalf("parley_wait by a short ID: %v", got)
	}
	if _, text, isErr := try(t, b, "parley_reply", map[string]any{"message_id": askID[:5], "text": "x"}); !isErr || !strings.Contains(text, "first 8") {
		t.Fatalf("5 characters: error=%v %q", isErr, text)
	}
	if _, text, isErr := try(t, b, "parley_reply", map[string]any{"message_id": "aaaaaaaa", "text": "x"}); !isErr || !strings.Contains(text, "begins with aaaaaaaa") {
		t.Fatalf("a prefix no event has: error=%v %q", isErr, text)
	}
}

// Another agent makes a room with the name of one alpha is in and invites
// alpha: from then on, what alpha is told of either room says who created
// it and its ID (a name alone does not say which); before, the name is
// enough.
func TestLookAlikeRoomsNamedApart(t *testing.T) {
	nt, a, b, room := twoAgents(t)
	reg, _ := call(t, a, "parley_register", nil)
	alpha := reg["address"].(string)
	call(t, b, "parley_say", map[string]any{"room": room, "text": "before"})
	var text string
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		_, got := call(t, a, "parley_read", map[string]any{})
		text += got
		return strings.Contains(text, "before")
	}, "alpha to read beta's first message")
	if strings.Contains(text, "created by") {
		t.Fatalf("a room no other room shares a name with is told apart:\n%s", text)
	}

	g := connect(t, nt, 1, "g")
	call(t, g, "parley_register", map[string]any{"name": "gamma"})
	// Not the same name byte for byte: one that reads the same (case,
	// width, an invisible character), as the dashboard folds it.
	out, _ := call(t, g, "parley_room_open", map[string]any{"name": "\uff42ENCH\ufe0f", "members": []string{alpha}})
	twin := out["room_id"].(string)
	if _, got := call(t, g, "parley_say", map[string]any{"room": twin, "text": "post here"}); !strings.Contains(got, "(room_id "+twin+")") {
		t.Fatalf("the post's confirmation does not give the room's ID: %q", got)
	}
	call(t, b, "parley_say", map[string]any{"room": room, "text": "the real one"})
	text = ""
	var creators []string
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		res, got := call(t, a, "parley_read", map[string]any{})
		text += got
		for _, p := range res["pending"].([]any) {
			if c, ok := p.(map[string]any)["room_creator"].(string); ok {
				creators = append(creators, c)
			}
		}
		return strings.Contains(text, "post here") && strings.Contains(text, "the real one")
	}, "alpha to read both rooms")
	// line is the line that holds s and the line before it: a pending
	// item's text stands indented under its header, which names the room.
	line := func(s string) string {
		prev := ""
		for l := range strings.Lines(text) {
			if strings.Contains(l, s) {
				return prev + l
			}
			prev = l
		}
		return ""
	}
	// Node 1 reads as node1 once node 0 learned its handle, else by its
	// peer ID.
	by1 := func(s string) bool {
		return strings.Contains(s, "created by @node1") || strings.Contains(s, "created by @"+nt.ID(1).String())
	}
	if l := line("post here"); !by1(l) || !strings.Contains(l, "room_id "+twin+")") {
		t.Fatalf("the look-alike's message does not say whose room it is: %q\n%s", l, text)
	}
	if l := line("the real one"); !strings.Contains(l, "created by @") || !strings.Contains(l, "room_id "+room+")") {
		t.Fatalf("the first room's message does not say whose room it is: %q\n%s", l, text)
	}
	if l := line("invited you"); !strings.Contains(l, "(room_id "+twin+", created by @") || !by1(l) {
		t.Fatalf("the invitation does not say who created the room:\n%s", text)
	}
	if !slices.Contains(creators, nt.ID(1).String()) {
		t.Fatalf("no pending item gives the look-alike's creator: %v\n%s", creators, text)
	}
}
