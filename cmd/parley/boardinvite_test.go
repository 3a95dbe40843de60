package main

import (
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// A contact's board is shared by inviting this node into its "board:KEY"
// room. That is Parley's own plumbing, not another user asking this one to
// take part in a conversation: it does not wait in the user's inbox and
// `parley status` as an invitation (INVITATION from coder@alice to
// "board:e3756e…"), where it stays until the user reads the board's room
// log, something nothing tells them to do.
func TestBoardRoomIsNoInvitationForTheUser(t *testing.T) {
	t.Parallel()
	srcA, _ := twoClones(t)
	homeA, homeB, _ := twoNodes(t)
	idB := peerID(t, homeB)
	befriend(t, homeA, homeB, idB)
	if _, errs, code := runEnv(t, srcA, []string{"PARLEY_AGENT="}, "--home", homeA, "claim", "src/a.go", "--note", "editing a.go"); code != 0 {
		t.Fatalf("claim: %s", errs)
	}
	var rooms []struct {
		Name string `json:"name"`
	}
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		runJSON(t, &rooms, "--home", homeB, "room", "list")
		return len(rooms) > 0
	}, "B to be in A's board room")
	var st struct {
		HumanInvitations int `json:"human_invitations"`
	}
	runJSON(t, &st, "--home", homeB, "status")
	if st.HumanInvitations != 0 {
		t.Errorf("B is in A's board room %q, and `parley status` counts %d invitation(s) waiting for B's user", rooms[0].Name, st.HumanInvitations)
	}
}
