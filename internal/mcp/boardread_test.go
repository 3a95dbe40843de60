package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// An agent's unread messages (parley_read) hold no board traffic: the
// board room's joins, claims and releases are the board's (parley_board),
// and a real message in another room still reads. Before, every claim and
// release of the project's agents, and their joins of the board room,
// came between the agents' messages. The board's notices meant for an
// agent (a path it was refused freed) still reach it, as pending items.
func TestUnreadMessagesHoldNoBoardTraffic(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a, b := connect(t, nt, 0, "a"), connect(t, nt, 0, "b")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	call(t, b, "parley_register", map[string]any{"name": "beta"})
	const key = "board-read-test"
	call(t, a, "parley_claim", map[string]any{"paths": []string{"api/*.go"}, "note": "new endpoint", "project": key, "ttl_minutes": 10})
	if _, text, isErr := try(t, b, "parley_claim", map[string]any{"paths": []string{"api/user.go"}, "note": "fix", "project": key}); !isErr {
		t.Fatalf("beta's claim in alpha's way was taken: %s", text)
	}
	call(t, b, "parley_claim", map[string]any{"paths": []string{"docs/*.md"}, "note": "docs", "project": key})
	call(t, a, "parley_release", map[string]any{"paths": []string{"api/*.go"}, "project": key})
	call(t, a, "parley_room_open", map[string]any{"name": "chat", "members": []string{"beta"}})
	call(t, a, "parley_say", map[string]any{"room": "chat", "text": "hello beta"})

	boardRoom := board.RoomName(key)
	freed := false
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, text := call(t, b, "parley_read", map[string]any{})
		freed = freed || strings.Contains(text, "api/user.go")
		for _, m := range out["messages"].([]any) {
			msg := m.(map[string]any)
			if msg["room_name"] == boardRoom {
				t.Fatalf("beta's unread messages hold the board's %s event: %v\n%s", msg["kind"], msg, text)
			}
			if msg["text"] == "hello beta" {
				return true
			}
		}
		return false
	}, "beta to read alpha's message")
	out, text := call(t, a, "parley_read", map[string]any{})
	for _, m := range out["messages"].([]any) {
		if msg := m.(map[string]any); msg["room_name"] == boardRoom {
			t.Fatalf("alpha's unread messages hold the board's %s event: %v\n%s", msg["kind"], msg, text)
		}
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		_, text := call(t, b, "parley_who", map[string]any{})
		freed = freed || strings.Contains(text, "api/user.go")
		return freed
	}, "beta to be told the path it was refused is free")
}
