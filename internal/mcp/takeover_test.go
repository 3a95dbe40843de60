package mcp_test

import (
	"context"
	"testing"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestLapsedSessionDoesNotActAsItsNamesNewHolder: before, a session whose
// registration lapsed (its process slept, the node swept it) while another
// session took its free name went on acting as that name: its calls
// carried the bare name, and its heartbeat renewed the other session's
// agent, so it posted in the other session's rooms, read its inbox and
// answered its asks; now each call and heartbeat names its session, the
// node refuses it for an agent another session holds, and the lapsed
// session binds again under a name of its own (and is told so).
func TestLapsedSessionDoesNotActAsItsNamesNewHolder(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx := context.Background()
	sleeper := connect(t, nt, 0, "sleeper-session")
	call(t, sleeper, "parley_register", map[string]any{"name": "alpha"})
	if err := nt.Node(0).Agents().Unregister(ctx, "alpha"); err != nil { // swept while asleep
		t.Fatal(err)
	}
	fresh := connect(t, nt, 0, "fresh-session")
	call(t, fresh, "parley_register", map[string]any{"name": "alpha"})
	out, _ := call(t, fresh, "parley_room_open", map[string]any{"name": "fresh-only"})
	room := out["room_id"].(string)

	// The sleeper wakes and posts in the room only the fresh session is in.
	if _, text, isErr := try(t, sleeper, "parley_say", map[string]any{"room": room, "text": "posted by the sleeper"}); !isErr {
		t.Fatalf("the lapsed session posted as the name another session now holds, in that session's room: %s", text)
	}
}
