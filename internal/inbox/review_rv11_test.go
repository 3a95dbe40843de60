package inbox_test

import (
	"context"
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

// A node invite the user already read (took, dismissed on the dashboard,
// or read the room with `parley room log`) is not told again after a
// --recover. The recovery file keeps m/invites-told (so the recovered
// database tells every room opened since, however old), but not the
// human's "i" cursors, which say which invites were told already: once the
// refetched room's admission is stored, the recovered node tells the user
// of it again, for every such room of the home, not only last week's.
func TestReviewTakenNodeInviteToldAgainAfterARecovery(t *testing.T) {
	var recovered atomic.Bool
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		if i == 1 && recovered.Load() {
			c.Recover = true
			c.InboxClock = func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }
		}
	}))
	room := invitedByPeerID(t, nt, "read-already")
	if _, ok, err := toldInvitation(nt, room); !ok {
		t.Fatalf("the invitation is never told: %v", err)
	}
	// The user reads the room (the dashboard's open, `parley room log`).
	res, err := ib(nt, 1).TakeInvitation(context.Background(), "human", localapi.InvitationRequest{Room: room})
	if err != nil || res.Taken != 1 {
		t.Fatalf("take the invitation: %+v %v", res, err)
	}
	// The database is lost a week later, and recovered.
	nt.Crash(1)
	if err := os.RemoveAll(filepath.Join(nt.Home(1), node.DataDirName)); err != nil {
		t.Fatal(err)
	}
	recovered.Store(true)
	nt.Restart(1)
	nt.WaitFor(30*time.Second, func() bool {
		_, ok, err := nt.Node(1).Rooms().Admission(identity.RoomID(room))
		return err == nil && ok
	}, "node 1 to refetch the invite that let it in")
	p, err := ib(nt, 1).Peek(context.Background(), "human")
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "invitation" && it.Room == room }) {
		t.Fatalf("after a --recover the user is told again of room %s, whose invitation they took a week before: %v", room, kinds(p))
	}
}
