package mcp_test

import (
	"fmt"
	"testing"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestRoomOpenWithManyMembersStaysSmall: parley_room_open takes as many
// members as a line holds (mcp.MaxLine, 1 MiB: some 100,000 short names).
// Its result says what became of each, and must stay within what clients
// take, as every other result does.
func TestRoomOpenWithManyMembersStaysSmall(t *testing.T) {
	t.Skip("finding: parley_room_open lists every member it could not invite, unbounded: 2,000 unknown names make a result of some 270 KB of text, and 50,000 (some 450 KB of arguments) one of 6.6 MB, after some 4 minutes of the node's work under -race (the post limit counts the call once)")
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(i int, c *node.Config) { c.RoomPolicy = rooms.DefaultPolicy{} }))
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	const n = 2000
	ms := make([]string, n)
	for k := range ms {
		ms[k] = fmt.Sprintf("m%05d", k)
	}
	_, text, isErr := try(t, a, "parley_room_open", map[string]any{"name": "many", "members": ms})
	if len(text) > 100<<10 {
		t.Errorf("parley_room_open of %d members (error %v) gives a result of %d bytes of text", n, isErr, len(text))
	}
}
