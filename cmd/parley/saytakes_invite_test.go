package main

import (
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// The README's first conversation: A invites B's node into "design", and
// B's user answers there with `parley room say design "hello from B"`.
// B's user has taken part in the room: the invitation to it is not left
// in `parley inbox` and counted by `parley status` as waiting, as it was
// (only `room log` took it), nor is one to a room they asked in.
func TestUsersPostTakesTheInvitation(t *testing.T) {
	t.Parallel()
	homeA, homeB, _ := twoNodes(t)
	idB := peerID(t, homeB)
	befriend(t, homeA, homeB, idB)
	invitations := func() int {
		var st struct {
			HumanInvitations int `json:"human_invitations"`
		}
		runJSON(t, &st, "--home", homeB, "status")
		return st.HumanInvitations
	}
	for i, post := range [][]string{{"say", "hello from B"}, {"ask", "ship on Friday?", "--wait", "0s"}} {
		before := invitations()
		var room localapi.OpenRoomResult
		name := []string{"design", "release"}[i]
		runJSON(t, &room, "--home", homeA, "room", "create", name)
		if _, errs, code := run(t, "--home", homeA, "room", "invite", room.RoomID, idB); code != 0 {
			t.Fatalf("room invite: %s", errs)
		}
		nodetest.WaitFor(t, 30*time.Second, func() bool { return invitations() == before+1 }, "B's user to be told of the invite")
		args := append([]string{"--home", homeB, "room", post[0], room.RoomID}, post[1:]...)
		if _, errs, code := runEnv(t, t.TempDir(), []string{"PARLEY_AGENT="}, args...); code != 0 {
			t.Fatalf("room %s: %s", post[0], errs)
		}
		if n := invitations(); n != before {
			t.Errorf("B's user posted in %q with `parley room %s`, and `parley status` still counts its invitation waiting (%d, %d before the invite)", name, post[0], n, before)
		}
	}
}
