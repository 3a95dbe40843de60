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

// Review (rv8): a read by event ID of a room the agent is not in is
// refused, yet the refusal gives the event's whole ID, found from its first
// 8 characters: an agent can probe prefixes to learn which events exist in
// rooms it is not in, and their whole IDs (the not_member and the
// unknown_event answers differ too). An ID of a room the agent is not in
// should be answered as one not found, without the ID.
func TestReviewReadByPrefixOfAnotherRoomGivesNothingAway(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	b := ib(nt, 0)
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "gamma")
	res, err := b.OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "private"})
	if err != nil {
		t.Fatal(err)
	}
	said, err := b.Say(ctx, "alpha", localapi.SayRequest{Room: res.RoomID, Text: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Read(ctx, "gamma", localapi.ReadRequest{ID: said.ID[:8]})
	if err == nil {
		t.Fatal("gamma read an event of a room it is not in")
	}
	if strings.Contains(err.Error(), said.ID) {
		t.Errorf("gamma gave 8 characters and learned the whole ID of an event of a room it is not in: %v", err)
	}
	_, errNone := b.Read(ctx, "gamma", localapi.ReadRequest{ID: strings.Repeat("a", 8)})
	if localapi.IsCode(err, localapi.CodeNotMember) && localapi.IsCode(errNone, localapi.CodeUnknownEvent) {
		t.Errorf("the answers tell an event of another room (%v) from none (%v)", err, errNone)
	}
}

// Review (rv8): a node invite is told to the node's user unless it is
// over 7 days old (nodeInvited), the age taken from the invite's own date,
// which the inviting node's clock wrote. An inviter whose clock is 8 days
// behind (or a user who looks at the inbox first 8 days later: the scan
// that tells it runs only when human's inbox is looked at) leaves the node
// in a room its user is never told of.
func TestReviewNodeInviteFromASlowClockIsTold(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		if i == 0 {
			c.RoomClock = func() time.Time { return time.Now().Add(-8 * 24 * time.Hour) }
		}
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
	nt.WaitFor(30*time.Second, func() bool {
		_, err := ib(nt, 1).Get(ctx, res.RoomID)
		return err == nil
	}, "node 1 to be in the room")
	var p localapi.Pending
	ok := nodetest.Poll(10*time.Second, func() bool {
		p, err = ib(nt, 1).Peek(ctx, "human")
		return err == nil && slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "invitation" && it.Room == res.RoomID })
	})
	if !ok {
		t.Fatalf("node 1 is in room %s by an invite of its peer ID, and its user is never told: %v %v", res.RoomID, kinds(p), err)
	}
}
