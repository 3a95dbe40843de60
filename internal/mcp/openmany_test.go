package mcp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestRoomOpenWithManyMembersStaysSmall: parley_room_open takes as many
// members as a line holds (mcp.MaxLine, 1 MiB: some 100,000 short names).
// Its result says what became of each, and must stay within what clients
// take, as every other result does: more than localapi.MaxOpenMembers are
// refused, in words, before the room opens; as many as that, none of
// them known, make a small result. Before, 2,000 unknown names made a
// result of some 270 KB, and 50,000 one of 6.6 MB.
func TestRoomOpenWithManyMembersStaysSmall(t *testing.T) {
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(i int, c *node.Config) { c.RoomPolicy = rooms.DefaultPolicy{} }))
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	names := func(n int) []string {
		ms := make([]string, n)
		for k := range ms {
			ms[k] = fmt.Sprintf("m%05d", k)
		}
		return ms
	}
	_, text, isErr := try(t, a, "parley_room_open", map[string]any{"name": "many", "members": names(2000)})
	if !isErr || !strings.Contains(text, "at most 64") {
		t.Fatalf("parley_room_open of 2,000 members: error %v: %.300s", isErr, text)
	}
	if len(nt.Node(0).Rooms().List()) != 0 {
		t.Fatal("a room opened though its members were refused")
	}
	_, text, isErr = try(t, a, "parley_room_open", map[string]any{"name": "many", "members": names(localapi.MaxOpenMembers)})
	if isErr || len(text) > 20<<10 {
		t.Fatalf("parley_room_open of %d unknown members: error %v, %d bytes of text", localapi.MaxOpenMembers, isErr, len(text))
	}
	t.Logf("%d unknown members: %d bytes of text", localapi.MaxOpenMembers, len(text))
}
