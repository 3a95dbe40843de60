package contacts_test

import (
	"context"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/rooms"
)

// An invite of a node whose contact request was denied says it is not a
// contact, not that it is "no longer" one: it never was.
func TestInviteOfADeniedRequesterSaysItIsNoContact(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	ctx := context.Background()
	res, err := svc(nt, 0).Request(ctx, peer.AddrInfo{ID: nt.ID(1)}, "hello")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 1, 0, consent.StatePendingIn)
	if _, err := svc(nt, 1).Deny(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	room := createRoom(t, nt, 1)
	_, err = mgr(nt, 1).Invite(ctx, room, nt.ID(0), identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "is not a contact (a contact request between you was denied)")
	if strings.Contains(err.Error(), "no longer") {
		t.Fatalf("the invite of a denied requester says %q", err)
	}
}
