package inbox_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// The dashboard's "Invitations for you" panel (Inbox.Invitations) gives,
// for each invitation, `parley room log ROOM` to read it ("reading it is
// taking the invitation", app.js) and an "open" button, yet neither takes
// it: the row stays until `parley inbox --take` (which the panel never
// names) or a leave. A user who reads the room as told sees the same
// invitation on every page load.
func TestReviewInvitationPanelRowStaysAfterTheRoomIsRead(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
	}))
	nt.ConnectAll()
	ctx := context.Background()
	res, err := ib(nt, 0).OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "five-minute"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Invite(ctx, "human", localapi.InviteRequest{Room: res.RoomID, Member: nt.ID(1).String()}); err != nil {
		t.Fatal(err)
	}
	listed := func() bool {
		its, err := ib(nt, 1).Invitations(ctx, "human")
		return err == nil && slices.ContainsFunc(its, func(it localapi.Item) bool { return it.Room == res.RoomID })
	}
	nt.WaitFor(30*time.Second, listed, "the invitation in node 1's panel")
	// What the panel's row says to do: parley room log ROOM.
	if _, err := ib(nt, 1).Log(ctx, res.RoomID, 50, ""); err != nil {
		t.Fatal(err)
	}
	if listed() {
		t.Errorf("the invitation to %s is still in the dashboard's panel after `parley room log` read the room, as the row says", res.RoomID)
	}
}
