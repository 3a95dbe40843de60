package mcp_test

import (
	"context"
	"testing"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestPostAfterRegistrationLapsed: the node refuses a post as an agent it
// does not know (not registered, no record in the room). A session whose
// registration lapsed before its next heartbeat (the process slept, the
// node swept it) is bound again and its call made again, so the post goes
// through as the session's agent.
func TestPostAfterRegistrationLapsed(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx := context.Background()
	cs := connect(t, nt, 0, "s1")
	me, _ := call(t, cs, "parley_register", map[string]any{"name": "sleeper"})
	res, err := nt.Node(0).Inbox().OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if err := nt.Node(0).Agents().Unregister(ctx, "sleeper"); err != nil {
		t.Fatal(err)
	}
	call(t, cs, "parley_say", map[string]any{"room": "r", "text": "awake again"})
	log, err := nt.Node(0).Rooms().Log(identity.RoomID(res.RoomID), 1, nil)
	if err != nil || len(log) != 1 || log[0].Agent != "sleeper" {
		t.Fatalf("the post after the lapse: %+v %v (session's agent %v)", log, err, me["address"])
	}
}
