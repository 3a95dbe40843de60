package contacts_test

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/rooms"
)

// TestDenialCutsOffTheAskerOnTheDeniersSideAlone: node 1 asks node 0 to be
// a contact and node 0's user declines; the two share a room that node 2,
// a contact of both, made. Node 0's user chose: node 1 is cut off there.
// Node 1's user chose nothing: node 0 stays a member like any other on
// node 1, its posts taken (before, a peer's denial of this node's request
// cut the peer off here as if this user had denied it).
func TestDenialCutsOffTheAskerOnTheDeniersSideAlone(t *testing.T) {
	nt := startNet(t, 3)
	ctx := context.Background()
	waitConnected(t, nt, 2, 0)
	waitConnected(t, nt, 2, 1)
	befriend(t, nt, 2, 0, 0)
	befriend(t, nt, 2, 1, 0)
	room := createRoom(t, nt, 2)
	invite(t, nt, 2, 0, room)
	invite(t, nt, 2, 1, room)

	waitConnected(t, nt, 1, 0)
	res, err := svc(nt, 1).Request(ctx, peer.AddrInfo{ID: nt.ID(0)}, "may I?")
	if err != nil || !res.Delivered {
		t.Fatalf("request: %+v, %v", res, err)
	}
	waitState(t, nt, 0, 1, consent.StatePendingIn)
	if _, err := svc(nt, 0).Deny(ctx, nt.ID(1).String()); err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 1, 0, consent.StateDenied)

	if !svc(nt, 0).CutOff(nt.ID(1)) || svc(nt, 0).Allowed(nt.ID(1)) == nil {
		t.Error("the denier's node does not cut off the node its user denied")
	}
	if svc(nt, 1).CutOff(nt.ID(0)) {
		t.Error("the asker's node cuts off the node that declined its request, which its user never chose")
	}
	if err := svc(nt, 1).Allowed(nt.ID(0)); err != nil {
		t.Errorf("the asker's node refuses a co-member that declined its request: %v", err)
	}
	say(t, nt, 0, room, "the decliner speaks in the room")
	nt.WaitFor(20e9, func() bool {
		return has(nt, 1, room, rooms.KindMessage, nt.ID(0), "the decliner speaks in the room")
	}, "node 1 to take the post of the node that declined its request")
}
