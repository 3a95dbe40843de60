package inbox_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
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
	var recovered atomic.Bool
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		if i == 1 && recovered.Load() {
			c.Recover = true
			c.InboxClock = func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }
		}
	}))
	room := invitedByPeerID(t, nt, "holiday")
	// Node 1's database is lost before its user looked; it is recovered,
	// and the user looks 8 days after the node was let into the room.
	nt.Crash(1)
	if err := os.RemoveAll(filepath.Join(nt.Home(1), node.DataDirName)); err != nil {
		t.Fatal(err)
	}
	recovered.Store(true)
	nt.Restart(1)
	nt.WaitFor(30*time.Second, func() bool {
		in, err := nt.Node(1).Rooms().Get(identity.RoomID(room))
		return err == nil && in.Events > 0
	}, "node 1 to refetch the room")
	if p, ok, err := toldInvitation(nt, room); !ok {
		t.Fatalf("node 1's database was recovered before its user looked; looking 8 days after its node was let into room %s, the user is never told of it: %v %v", room, kinds(p), err)
	}
}
