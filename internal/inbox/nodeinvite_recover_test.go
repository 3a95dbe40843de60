package inbox_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// A node invite is told however late the user first looks, once the
// database's inbox told node invites when the room was opened
// (m/invites-told). A database recovered with --recover (the room list
// restored from recovery.json into a new database, rooms refetched) is the
// same home, and its rooms were opened while its inbox told node invites:
// a room its user had not looked at yet is still told when the user looks
// a week later. Before, m/invites-told was not among the keys recovery.json
// keeps, so the new database told from the recovery on, and the room, now
// "opened before", fell under the 7-day rule of older homes.
func TestNodeInviteToldAfterARecovery(t *testing.T) {
	nt, recoverNode1 := recoveringNodes(t)
	room := invitedByPeerID(t, nt, "holiday")
	// Node 1's database is lost before its user looked; it is recovered,
	// and the user looks 8 days after the node was let into the room.
	recoverNode1()
	nt.WaitFor(30*time.Second, func() bool {
		in, err := nt.Node(1).Rooms().Get(identity.RoomID(room))
		return err == nil && in.Events > 0
	}, "node 1 to refetch the room")
	if p, ok, err := toldInvitation(nt, room); !ok {
		t.Fatalf("node 1's database was recovered before its user looked; looking 8 days after its node was let into room %s, the user is never told of it: %v %v", room, kinds(p), err)
	}
}

// A node invite the user already read (took, dismissed on the dashboard,
// or read the room with `parley room log`) is not told again after a
// --recover: recovery.json keeps the human's "i" cursors, which say which
// invites were told already, beside m/invites-told. Before, it kept only
// m/invites-told, and once the refetched room's admission was stored, the
// recovered node told the user of it again, for every such room of the
// home, not only last week's (found by a review).
func TestTakenNodeInviteNotToldAgainAfterARecovery(t *testing.T) {
	nt, recoverNode1 := recoveringNodes(t)
	room := invitedByPeerID(t, nt, "read-already")
	if _, ok, err := toldInvitation(nt, room); !ok {
		t.Fatalf("the invitation is never told: %v", err)
	}
	// The user reads the room (the dashboard's open, `parley room log`).
	res, err := ib(nt, 1).TakeInvitation(context.Background(), "human", localapi.InvitationRequest{Room: room})
	if err != nil || res.Taken != 1 {
		t.Fatalf("take the invitation: %+v %v", res, err)
	}
	// The database is lost, and recovered a week later.
	recoverNode1()
	nt.WaitFor(30*time.Second, func() bool {
		_, ok, err := nt.Node(1).Rooms().Admission(identity.RoomID(room))
		return err == nil && ok
	}, "node 1 to refetch the invite that let it in")
	p, err := ib(nt, 1).Peek(context.Background(), "human")
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "invitation" && it.Room == room }) {
		t.Fatalf("after a --recover the user is told again of room %s, whose invitation they took before: %v", room, kinds(p))
	}
}

// A node invite told to the user but not read yet is still in the inbox
// after a --recover: recovery.json keeps the user's open invitations with
// the "i" cursors that say they were told (without them, a told cursor
// kept alone would have lost the invitation for good).
func TestToldNodeInviteStillOpenAfterARecovery(t *testing.T) {
	nt, recoverNode1 := recoveringNodes(t)
	room := invitedByPeerID(t, nt, "unread")
	if _, ok, err := toldInvitation(nt, room); !ok {
		t.Fatalf("the invitation is never told: %v", err)
	}
	// The recovery file is written every few seconds: the database is
	// lost once it holds the told invitation.
	nt.WaitFor(30*time.Second, func() bool {
		raw, err := os.ReadFile(filepath.Join(nt.Home(1), node.RecoveryFileName))
		type entry struct {
			K []byte `json:"k"`
		}
		var rf struct{ Entries []entry }
		if err != nil || json.Unmarshal(raw, &rf) != nil {
			return false
		}
		return slices.ContainsFunc(rf.Entries, func(e entry) bool { return string(e.K) == "s/a/human/i/"+room })
	}, "the recovery file to hold the told invite")
	recoverNode1()
	if p, ok, err := toldInvitation(nt, room); !ok {
		t.Fatalf("the user was told of room %s and had not read it; after a --recover the invitation is gone: %v %v", room, kinds(p), err)
	}
}

// recoveringNodes starts two nodes whose node 1 can lose its database and
// start again with --recover (recoverNode1), its inbox's clock then 8 days
// ahead (past the 7-day rule of homes from before m/invites-told).
func recoveringNodes(t *testing.T) (*nodetest.Net, func()) {
	var recovered atomic.Bool
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		if i == 1 && recovered.Load() {
			c.Recover = true
			c.InboxClock = func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }
		}
	}))
	return nt, func() {
		nt.Crash(1)
		if err := os.RemoveAll(filepath.Join(nt.Home(1), node.DataDirName)); err != nil {
			t.Fatal(err)
		}
		recovered.Store(true)
		nt.Restart(1)
	}
}
