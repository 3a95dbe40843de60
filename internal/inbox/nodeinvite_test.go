package inbox_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// A node invite is told to the node's user while it is news, its age
// judged by when this node opened the room, by this node's clock: the
// invite's own date is the inviting node's clock's. Before, an inviter
// whose clock was 8 days behind had its invite taken as over 7 days old
// at once, and the node was in a room its user was never told of.
func TestNodeInviteFromASlowClockIsTold(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		if i == 0 {
			c.RoomClock = func() time.Time { return time.Now().Add(-8 * 24 * time.Hour) }
		}
	}))
	room := invitedByPeerID(t, nt, "five-minute")
	if p, ok, err := toldInvitation(nt, room); !ok {
		t.Fatalf("node 1 is in room %s by an invite of its peer ID, and its user is never told: %v %v", room, kinds(p), err)
	}
}

// A node invite is told to the node's user however late the user first
// looks, once the node's inbox told node invites when the room was opened:
// before, a user who first read the inbox more than 7 days after the node
// was let into a room was never told of it (the age rule meant for the
// rooms of a home that came before invitations were told).
func TestNodeInviteToldWhenTheUserLooksAWeekLater(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		if i == 1 {
			c.InboxClock = func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }
		}
	}))
	room := invitedByPeerID(t, nt, "holiday")
	if p, ok, err := toldInvitation(nt, room); !ok {
		t.Fatalf("node 1's user, looking 8 days after its node was let into room %s, is never told of it: %v %v", room, kinds(p), err)
	}
}

// invitedByPeerID has node 0's human open a room named name and invite node
// 1 into it by its peer ID, and waits for node 1 to be in it.
func invitedByPeerID(t *testing.T, nt *nodetest.Net, name string) string {
	t.Helper()
	nt.ConnectAll()
	ctx := context.Background()
	res, err := ib(nt, 0).OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: name})
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
	return res.RoomID
}

// toldInvitation waits up to 10 s for node 1's human to hold an
// invitation to room; it returns the last pending items seen.
func toldInvitation(nt *nodetest.Net, room string) (p localapi.Pending, ok bool, err error) {
	ok = nodetest.Poll(10*time.Second, func() bool {
		p, err = ib(nt, 1).Peek(context.Background(), "human")
		return err == nil && slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "invitation" && it.Room == room })
	})
	return p, ok, err
}

// waitingPolicy lets every node talk and invite, and trusts no node's
// invite to open a room at once: each waits for the user's answer.
type waitingPolicy struct{}

func (waitingPolicy) CanInvite(peer.ID) error { return nil }
func (waitingPolicy) Allowed(peer.ID) error   { return nil }
func (waitingPolicy) TrustInvite(peer.ID) bool {
	return false
}

// A node invite the user accepted (`parley invites accept`) is not told
// again as an invitation in the inbox: the user answered it, and the node
// is in the room by it. Before, the inbox offered it as news once the
// invite event was stored.
func TestAcceptedNodeInviteIsNotToldAgain(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
		if i == 1 {
			c.RoomPolicy = waitingPolicy{}
		} else {
			c.RoomPolicy = rooms.DefaultPolicy{}
		}
	}))
	nt.ConnectAll()
	ctx := context.Background()
	res, err := ib(nt, 0).OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "asked-first"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Invite(ctx, "human", localapi.InviteRequest{Room: res.RoomID, Member: nt.ID(1).String()}); err != nil {
		t.Fatal(err)
	}
	m := nt.Node(1).Rooms()
	nt.WaitFor(30*time.Second, func() bool { return len(m.Invites()) == 1 }, "the invite to wait for node 1's user")
	if _, err := m.AcceptInvite(res.RoomID); err != nil {
		t.Fatal(err)
	}
	// The invite event is stored and the node joined as human: the inbox
	// has all it would tell.
	nt.WaitFor(30*time.Second, func() bool {
		v, ok, err := m.Admission(identity.RoomID(res.RoomID))
		rec, in, _ := m.AgentState(identity.RoomID(res.RoomID), "human@"+nt.ID(1).String())
		return err == nil && ok && v.Kind == rooms.KindInvite && v.Target == nt.ID(1) && in && rec.In
	}, "node 1 to store its invite and join")
	for range 3 {
		p, err := ib(nt, 1).Peek(ctx, "human")
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "invitation" && it.Room == res.RoomID }) {
			t.Fatalf("the invite node 1's user accepted is told again as an invitation: %+v", p.Items)
		}
	}
}
