package main

import (
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// An agent of an MCP client (Claude Code, Codex, Gemini CLI, opencode:
// its parley mcp started by the client) runs its shell commands with no
// $PARLEY_AGENT: only `parley run` sets it. Such an agent that reads a
// room with `parley room log ROOM` (as its notices' "parley room log ROOM,
// shows them" says) is not the node's user reading it, and the user's
// invitation to the room stays. The node knows the agent by its client's
// process (POST /v1/agents/by-process, as parley guard asks). Now the CLI
// goes by $PARLEY_AGENT alone, and the agent's read takes the user's
// invitation: the user is never told another node brought theirs into
// the room.
func TestReviewMCPAgentsRoomLogTakesTheUsersInvitation(t *testing.T) {
	t.Parallel()
	homeA, homeB, _ := twoNodes(t)
	idB := peerID(t, homeB)
	befriend(t, homeA, homeB, idB)
	coder := startFakeClient(t, homeB, "coder", t.TempDir())
	var room localapi.OpenRoomResult
	runJSON(t, &room, "--home", homeA, "room", "create", "design")
	for _, member := range []string{idB, "test-coder@" + idB} {
		if _, errs, code := run(t, "--home", homeA, "room", "invite", room.RoomID, member); code != 0 {
			t.Fatalf("room invite %s: %s", member, errs)
		}
	}
	invitations := func() int {
		var st struct {
			HumanInvitations int `json:"human_invitations"`
		}
		runJSON(t, &st, "--home", homeB, "status")
		return st.HumanInvitations
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool { return invitations() == 1 }, "B's user to be told of the node invite")
	// The agent reads the room from the shell its client gives it.
	if code, out := coder.run(t, parleyBin, "--home", homeB, "room", "log", room.RoomID); code != 0 {
		t.Fatalf("the agent's room log: %d %s", code, out)
	}
	if n := invitations(); n != 1 {
		t.Fatalf("agent test-coder, in an MCP client, ran `parley room log %s` from its shell, and B's user's invitation to the room went (status counts %d)", room.RoomID, n)
	}
}
