package node_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Regression: the invites an ask makes were not in the asking node's audit
// log. An ask of an agent not in the room invites it, as `room invite`
// does, and an ask with no room opens a room of the two (create, then
// invite); each is a decision on who can reach whom, recorded on the node
// that makes it (actor room.invite ROOM, actor room.create ROOM).
func TestAskRecordsItsInvitesInTheAuditLog(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	for _, name := range []string{"alpha", "beta", "gamma"} {
		if _, err := c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "plans"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ask(ctx, "alpha", localapi.AskRequest{Room: res.RoomID, To: "beta", Text: "which version?"}); err != nil {
		t.Fatal(err)
	}
	in, err := c.Room(ctx, res.RoomID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(in.Agents, func(a string) bool { return strings.HasPrefix(a, "beta@") }) {
		t.Fatalf("the ask did not bring beta in: %+v", in.Agents)
	}
	want := "alpha room.invite " + res.RoomID
	if got := auditActions(t, nt, 0); !slices.Contains(got, want) {
		t.Errorf("audit log lacks %q (the invite the ask made):\n%s", want, strings.Join(got, "\n"))
	}
	// An ask of an agent in the room already invites no one: nothing new.
	if _, err := c.Ask(ctx, "alpha", localapi.AskRequest{Room: res.RoomID, To: "beta", Text: "and which port?"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range auditActions(t, nt, 0) {
		if a == want {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d records of %q; want 1 (an ask of an agent in the room already invites no one)", n, want)
	}

	pair, err := c.Ask(ctx, "alpha", localapi.AskRequest{To: "gamma", Text: "and in a room of our own?"})
	if err != nil {
		t.Fatal(err)
	}
	got := auditActions(t, nt, 0)
	for _, w := range []string{"alpha room.create " + pair.Room.RoomID, "alpha room.invite " + pair.Room.RoomID} {
		if !slices.Contains(got, w) {
			t.Errorf("audit log lacks %q (the room of two an ask opened):\n%s", w, strings.Join(got, "\n"))
		}
	}
}
