package inbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// parley_wait (WaitReply) looks an ask up by prefix in every room of the
// node (find(ask, "")), not in the agent's rooms as every other lookup by
// event ID now does: its answer tells an agent whether an event of a room
// it was never let into exists ("is not an ask of yours") or not ("no
// event … begins with"), the probe find's change meant to close. It
// should answer as find does for the agent: no event in the rooms it was
// let into.
func TestReviewWaitReplyProbesRoomsNotLetInto(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	b := ib(nt, 0)
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	register(t, nt, 0, "gamma")
	res, err := b.OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "secret", Members: []string{"beta"}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	ask, err := b.Ask(ctx, "alpha", localapi.AskRequest{Room: res.RoomID, Text: "the plan?"})
	if err != nil {
		t.Fatal(err)
	}
	// What a read by ID says to gamma: as if the event did not exist.
	_, rerr := b.Read(ctx, "gamma", localapi.ReadRequest{ID: ask.AskID[:8]})
	if !localapi.IsCode(rerr, localapi.CodeUnknownEvent) || !strings.Contains(rerr.Error(), "were let into") {
		t.Fatalf("gamma's read of the ask by prefix: %v", rerr)
	}
	for _, id := range []string{ask.AskID[:8], ask.AskID} {
		_, err := b.WaitReply(ctx, "gamma", id, 0, false)
		if err == nil || strings.Contains(err.Error(), "not an ask of yours") || !strings.Contains(err.Error(), "were let into") {
			t.Errorf("gamma's parley_wait on %s, an ask of a room it was never let into: %v; want the answer a read gives (no event in the rooms you (gamma) were let into)", id, err)
		}
	}
}

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
