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
