package contacts_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestRevokedContactAskingAgainStaysCutOff: A's user revoked B, who shares
// a room with A. Once the cool-down is over, B asks to be a contact again;
// the request waits for A's user. Until the user approves, B must stay cut
// off: its events refused, the room's sync refused to it. Before, a
// request waiting was no cut-off at all (a pending-in contact counts as
// nothing), so B, a co-member, was let back into every room it shared with
// A by its own request, which A's user may never answer.
func TestRevokedContactAskingAgainStaysCutOff(t *testing.T) {
	var ahead atomic.Int64
	nt := startNet(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 0 {
			c.ContactClock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
		}
	}))
	waitConnected(t, nt, 0, 1)
	ctx := context.Background()
	befriend(t, nt, 0, 1, 0)
	room := createRoom(t, nt, 0)
	invite(t, nt, 0, 1, room)
	if _, err := svc(nt, 0).Revoke(ctx, nt.ID(1).String()); err != nil {
		t.Fatal(err)
	}
	if err := svc(nt, 0).Allowed(nt.ID(1)); !errors.Is(err, consent.ErrRevoked) {
		t.Fatalf("Allowed(revoked) = %v", err)
	}
	// A day and more later, B asks again.
	ahead.Store(int64(25 * time.Hour))
	res, err := svc(nt, 1).Request(ctx, peer.AddrInfo{ID: nt.ID(0)}, "let me back in")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Delivered {
		t.Fatalf("request not delivered: %+v", res)
	}
	waitState(t, nt, 0, 1, consent.StatePendingIn)
	if err := svc(nt, 0).Allowed(nt.ID(1)); err == nil {
		t.Error("a node this user revoked is allowed into its rooms again by its own request, still waiting for the user")
	}
	if !svc(nt, 0).CutOff(nt.ID(1)) {
		t.Error("a node this user revoked is no longer cut off once it asks again")
	}
	if mgr(nt, 0).PeerFilter(nt.ID(1), mgr(nt, 0).TopicOf(room)) {
		t.Error("the revoked node asking again passes the room topic's peer filter")
	}
	say(t, nt, 0, room, "said after the revocation")
	if err := mgr(nt, 1).SyncNow(ctx, room, nt.ID(0)); err == nil &&
		has(nt, 1, room, rooms.KindMessage, nt.ID(0), "said after the revocation") {
		t.Error("the revoked node read a post made after its revocation by asking again")
	}
}
