package mcp_test

import (
	"context"
	"testing"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestPostAfterRegistrationLapsed: the node refuses a post as an agent it
// does not know (not registered, no record in any room). A session whose
// registration lapsed before its next heartbeat (the process slept, the
// node swept it) is bound again and its call made again, so the room it
// opens is opened by the session's agent.
func TestPostAfterRegistrationLapsed(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx := context.Background()
	cs := connect(t, nt, 0, "s1")
	me, _ := call(t, cs, "parley_register", map[string]any{"name": "sleeper"})
	if err := nt.Node(0).Agents().Unregister(ctx, "sleeper"); err != nil {
		t.Fatal(err)
	}
	out, _ := call(t, cs, "parley_room_open", map[string]any{"name": "awake again"})
	id, _ := out["room_id"].(string)
	log, err := nt.Node(0).Rooms().Log(identity.RoomID(id), 1, nil)
	if err != nil || len(log) != 1 || log[0].Agent != "sleeper" {
		t.Fatalf("the room opened after the lapse: %+v %v (session's agent %v)", log, err, me["address"])
	}
}
