package mcp_test

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// connectBeat is connect with a heartbeat every beat (0: the default).
func connectBeat(tb testing.TB, nt *nodetest.Net, i int, session string, beat time.Duration) *sdk.ClientSession {
	tb.Helper()
	cs, _ := serve(tb, nt, i, mcp.Config{Session: session, ClientName: "bench", Project: "/p", HeartbeatEvery: beat})
	return cs
}

// TestKilledAgentDoesNotComeBackUnderItsDefaultName: before, when the
// user killed an agent (parley agent kill), the kill dropped its
// registration and its session, and its MCP server, still running, took
// the refusal of its next call as a lapsed registration, bound the session
// again and got the default name (client and project), not killed: the
// killed session's call was made again and posted at once (its heartbeat
// did the same without a call); now the node keeps the killed agent's
// sessions bound to its name and refuses them (CodeKilled) until it is
// revived, and the MCP server tells the agent it was killed.
func TestKilledAgentDoesNotComeBackUnderItsDefaultName(t *testing.T) {
	nt := nodetest.Start(t, 1)
	cs := connectBeat(t, nt, 0, "to-be-killed", time.Hour)
	call(t, cs, "parley_register", map[string]any{"name": "rogue"})
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Kill(ctx, localapi.ModerateRequest{Agent: "rogue"}); err != nil {
		t.Fatal(err)
	}
	out, text, isErr := try(t, cs, "parley_room_open", map[string]any{"name": "after the kill"})
	if !isErr {
		id, _ := out["room_id"].(string)
		log, _ := nt.Node(0).Rooms().Log(identity.RoomID(id), 1, nil)
		by := "?"
		if len(log) == 1 {
			by = string(log[0].Agent)
		}
		t.Fatalf("the killed agent's session opened a room after the kill, as %q: %s", by, text)
	}
}
