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
	wantErr(t, err, rooms.ErrInviteRefused, "is not a contact (you denied its contact request)")
	if strings.Contains(err.Error(), "no longer") {
		t.Fatalf("the invite of a denied requester says %q", err)
	}

	// The node denied: its own request would be refused for 24 h, so the
	// refusal does not send it there.
	waitState(t, nt, 0, 1, consent.StateDenied)
	room0 := createRoom(t, nt, 0)
	_, err = mgr(nt, 0).Invite(ctx, room0, nt.ID(1), identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "is not a contact (it denied your contact request)")
	if strings.Contains(err.Error(), "parley contact request") {
		t.Fatalf("the invite by a node whose request was denied tells it to request again, which is refused for 24 h: %q", err)
	}
}
