package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// An agent's inbox tells it to read a room it was invited into with
// `parley room log ROOM` (no --as: the log is the node's). An agent that
// runs it as told (with $PARLEY_AGENT set, as parley run sets it) is not
// the node's user reading the room: the user's own invitation to the room
// (another node brought this node in by its peer ID) stays in the user's
// inbox and the dashboard's panel. The user's own `parley room log`, as
// the panel's row says, takes it. Before, any read of the log took it.
func TestAgentsRoomLogLeavesTheUsersInvitation(t *testing.T) {
	t.Parallel()
	homeA, homeB, _ := twoNodes(t)
	idB := peerID(t, homeB)
	befriend(t, homeA, homeB, idB)
	if _, errs, code := run(t, "--home", homeB, "agent", "register", "coder", "--ttl", "1h"); code != 0 {
		t.Fatal(errs)
	}
	room, invitations := invitedWithAgent(t, homeA, homeB, idB, "coder")
	var out string
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _, _ = run(t, "--home", homeB, "inbox", "--as", "coder")
		return strings.Contains(out, "INVITATION")
	}, "coder's invitation")
	m := regexp.MustCompile(`read it: parley room log (\S+);`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("coder's inbox names no room log to read: %q", out)
	}
	// coder does what its inbox says, as an agent with a shell would.
	if _, errs, code := runEnv(t, t.TempDir(), []string{"PARLEY_AGENT=coder"}, "--home", homeB, "room", "log", m[1]); code != 0 {
		t.Fatalf("coder's room log: %s", errs)
	}
	if n := invitations(); n != 1 {
		t.Fatalf("agent coder ran `parley room log %s` as its inbox told it, and B's user's invitation to the room went (status counts %d): B's user is never told another node brought B into a room", m[1], n)
	}
	if _, errs, code := runEnv(t, t.TempDir(), []string{"PARLEY_AGENT="}, "--home", homeB, "room", "log", room.RoomID); code != 0 || errs != "" {
		t.Fatalf("the user's room log: exit %d, %q", code, errs)
	}
	if n := invitations(); n != 0 {
		t.Errorf("B's user read the room with parley room log, as the dashboard's row says, and the invitation stays (status counts %d)", n)
	}
}

// An agent of an MCP client (Claude Code, Codex, Gemini CLI, opencode:
// its parley mcp started by the client) runs its shell commands with no
// $PARLEY_AGENT: only `parley run` sets it. Such an agent that reads a
// room with `parley room log ROOM` (as its notices' "parley room log ROOM,
// shows them" says) is not the node's user reading it, and the user's
// invitation to the room stays. The node knows the agent by its client's
// process (POST /v1/agents/by-process, as parley guard asks). Before, the
// CLI went by $PARLEY_AGENT alone, and the agent's read took the user's
// invitation: the user was never told another node brought theirs into
// the room.
func TestMCPAgentsRoomLogLeavesTheUsersInvitation(t *testing.T) {
	t.Parallel()
	homeA, homeB, _ := twoNodes(t)
	idB := peerID(t, homeB)
	befriend(t, homeA, homeB, idB)
	coder := startFakeClient(t, homeB, "coder", t.TempDir())
	room, invitations := invitedWithAgent(t, homeA, homeB, idB, "test-coder")
	// The agent reads the room from the shell its client gives it.
	if code, out := coder.run(t, parleyBin, "--home", homeB, "room", "log", room.RoomID); code != 0 {
		t.Fatalf("the agent's room log: %d %s", code, out)
	}
	if n := invitations(); n != 1 {
		t.Fatalf("agent test-coder, in an MCP client, ran `parley room log %s` from its shell, and B's user's invitation to the room went (status counts %d)", room.RoomID, n)
	}
}

// invitedWithAgent has A open a room "design" and invite B's node and its
// agent, and waits for B's user to be told of the node invite. It returns
// the room and a count of B's user's invitations.
func invitedWithAgent(t *testing.T, homeA, homeB, idB, agent string) (localapi.OpenRoomResult, func() int) {
	t.Helper()
	var room localapi.OpenRoomResult
	runJSON(t, &room, "--home", homeA, "room", "create", "design")
	for _, member := range []string{idB, agent + "@" + idB} {
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
	return room, invitations
}
