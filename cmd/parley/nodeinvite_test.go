package main

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestNodeInviteTellsTheHuman: the README's five-minute walk invites the
// other node by its peer ID (`room invite ROOM PEER_ID`). That node's user
// (human) is told, as an invite of human@PEER tells it: `status` counts one
// invitation and `inbox` shows it (once taken, no more). Neither a rescan, nor the node's
// restart, nor the rooms the node founded, nor its own invites give it
// another.
func TestNodeInviteTellsTheHuman(t *testing.T) {
	t.Parallel()
	homeA, homeB, a := twoNodes(t)
	idB := peerID(t, homeB)
	if _, errs, code := run(t, "--home", homeA, "contact", "request", idB); code != 0 {
		t.Fatalf("contact request: %s", errs)
	}
	var reqID string
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		for _, c := range contactsOf(t, homeB) {
			if c.State == "pending-in" {
				reqID = c.ID
				return true
			}
		}
		return false
	}, "the request to reach B")
	if _, errs, code := run(t, "--home", homeB, "contact", "approve", reqID); code != 0 {
		t.Fatalf("contact approve: %s", errs)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { return stateOf(t, homeA, idB) == "active" }, "the contact to be active")

	invitations := func(home string) int {
		var st struct {
			HumanInvitations int `json:"human_invitations"`
		}
		runJSON(t, &st, "--home", home, "status")
		return st.HumanInvitations
	}
	// B's own room: nothing to be told of.
	if _, errs, code := run(t, "--home", homeB, "room", "create", "own"); code != 0 {
		t.Fatalf("room create on B: %s", errs)
	}
	var room localapi.OpenRoomResult
	runJSON(t, &room, "--home", homeA, "room", "create", "design")
	if _, errs, code := run(t, "--home", homeA, "room", "invite", room.RoomID, idB); code != 0 {
		t.Fatalf("room invite: %s", errs)
	}
	// Watched by the room list: `room log` is the user reading the room,
	// which takes the invitation.
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		out, _, code := run(t, "--home", homeB, "room", "list", "--json")
		return code == 0 && strings.Contains(out, room.RoomID)
	}, "the room to open on B")
	if !nodetest.Poll(10*time.Second, func() bool { return invitations(homeB) == 1 }) {
		t.Fatalf("B's node was invited into room design by its peer ID, yet status counts %d invitations for its user", invitations(homeB))
	}
	out, errs, _ := run(t, "--home", homeB, "inbox")
	if strings.Count(out, "INVITATION") != 1 || !strings.Contains(out, "design") {
		t.Errorf("B's inbox after A invited B's node into design: want one invitation to design, got:\n%s%s", out, errs)
	}
	// Once taken, the next inbox and status have none.
	if out, _, _ := run(t, "--home", homeB, "inbox", "--take"); strings.Count(out, "INVITATION") != 1 {
		t.Errorf("inbox --take: want the one invitation, got:\n%s", out)
	}
	if out, _, _ := run(t, "--home", homeB, "inbox"); strings.Contains(out, "INVITATION") {
		t.Errorf("the invitation is shown again after inbox --take:\n%s", out)
	}
	if n := invitations(homeB); n != 0 {
		t.Errorf("status counts %d invitations after inbox --take showed it", n)
	}
	// The inviter's user is not told of its own room nor its own invite.
	if n := invitations(homeA); n != 0 {
		t.Errorf("A's status counts %d invitations for the room it created and the invite it sent", n)
	}

	// After B's restart (every room scanned again from its cursors) the
	// invite is not news again.
	if _, errs, code := run(t, "--home", homeB, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	if _, errs, code := run(t, "--home", homeA, "room", "say", room.RoomID, "after the restart"); code != 0 {
		t.Fatalf("room say: %s", errs)
	}
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		out, _, _ := run(t, "--home", homeB, "room", "log", room.RoomID)
		return strings.Contains(out, "after the restart")
	}, "A's message to reach B after its restart")
	if n := invitations(homeB); n != 0 {
		t.Errorf("after B's restart status counts %d invitations", n)
	}
	if out, _, _ := run(t, "--home", homeB, "inbox"); strings.Contains(out, "INVITATION") {
		t.Errorf("after B's restart the invitation is shown again:\n%s", out)
	}
}
