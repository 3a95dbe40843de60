package rooms_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestRestoredNodeToldRoomsByAContactItForgot: node 1's home is put back
// on a copy taken before it became node 0's contact, and before it joined
// node 0's room. Node 1 no longer knows node 0 (a stranger, in no room it
// holds), yet node 0 still counts it in: node 1 answers node 0's ask and
// is told the room back, its own event proving it accepted it. A
// stranger's word waits for the user (listed among the invites, marked
// told back) and opens nothing until accepted; accepted, the room comes
// back. Before h3, node 1's contacts policy refused node 0 outright and
// the room never came back.
func TestRestoredNodeToldRoomsByAContactItForgot(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
	}))
	waitConnected(t, nt, 0, 1)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)
	nt.Befriend(t, 0, 1)

	id := roomOf(t, nt, 0, "friends", 1)
	say(t, nt, 1, id, "mine")
	waitConverged(t, nt, id, 4, 20*time.Second, 0, 1)

	nt.Crash(1)
	nt.RestoreData(1, old)
	nt.Restart(1)
	nt.WaitFor(40*time.Second, func() bool { return heldToldBack(nt, 1, id) }, "node 0's tell-back to wait for node 1's user")
	if mgr(nt, 1).Provisional(id) || mgr(nt, 1).HasRecord(id) {
		t.Fatal("a stranger's tell-back opened the room before the user accepted it")
	}
	if _, err := mgr(nt, 1).AcceptInvite(string(id)); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(40*time.Second, func() bool {
		_, err := mgr(nt, 1).Get(id)
		return err == nil
	}, "node 1 to be told the room back by node 0, a contact it forgot")
	waitConverged(t, nt, id, 4, 40*time.Second, 0, 1)
}

// TestRevokedContactCannotTellRoomsBack: a stranger may tell a restored
// node its rooms back, but a contact the node revoked may not, even with
// a notice that is right in every other way (node 1's own event in a room
// its older copy lacks).
func TestRevokedContactCannotTellRoomsBack(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
	}))
	ctx := context.Background()
	nt.ConnectAll() // nodes 1 and 2 meet through node 0 otherwise: slow under load (a CI flake)
	waitConnected(t, nt, 1, 2)
	nt.Befriend(t, 1, 2)
	if _, err := nt.Node(1).Contacts().Revoke(ctx, nt.ID(2).String()); err != nil {
		t.Fatal(err)
	}
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)
	nt.Befriend(t, 0, 1)
	id := roomOf(t, nt, 0, "r", 1)
	post := say(t, nt, 1, id, "mine")
	own := wireOf(t, nt, 0, id, post)
	create, invite := roomWires(t, nt, 0, id, 1)

	nt.Crash(0)
	nt.Crash(1)
	nt.RestoreData(1, old)
	nt.Restart(1)
	waitConnected(t, nt, 1, 2)
	err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), id, invite, create, own)
	if !errors.Is(err, rooms.ErrInviteRefused) || !strings.Contains(err.Error(), consent.ErrRevoked.Error()) {
		t.Fatalf("a revoked contact's tell-back: %v, want it refused as revoked", err)
	}
	if waits(nt, 1, id) || mgr(nt, 1).Provisional(id) {
		t.Fatal("a revoked contact's tell-back waits for the user, or opened the room")
	}
	if _, err := mgr(nt, 1).Get(id); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("node 1 opened the room a revoked contact told it (%v)", err)
	}
}
