package contacts_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/rooms"
)

// TestRevokedContactGetsNoNewGossip: A and B share a room, alone; A's user
// revokes B. A's later posts must not be sent to B's node at all: a
// modified client reads whatever reaches it, whatever its own validator
// makes of it. GossipSub's peer filter vets only peers that join a mesh,
// so B, in A's mesh before the revocation, stayed in it and got every
// post A made after it (counted on B as gossip refused for want of
// consent, which only a message A sent can be: the room has no third
// node).
func TestRevokedContactGetsNoNewGossip(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	ctx := context.Background()
	befriend(t, nt, 0, 1, 0)
	room := createRoom(t, nt, 0)
	invite(t, nt, 0, 1, room)
	// Gossip flows both ways: B in A's mesh.
	for i := 0; ; i++ {
		text := fmt.Sprintf("before %d", i)
		say(t, nt, 0, room, text)
		ok := false
		tick := time.NewTicker(20 * time.Millisecond)
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !ok; <-tick.C {
			ok = has(nt, 1, room, rooms.KindMessage, nt.ID(0), text)
		}
		tick.Stop()
		if ok && i >= 3 {
			break
		}
		if i > 20 {
			t.Fatal("B never got A's posts")
		}
	}
	if _, err := svc(nt, 0).Revoke(ctx, nt.ID(1).String()); err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 1, 0, "revoked")
	base := counter(t, nt, 1, "parley_room_events_rejected_total", "reason", "no_consent")
	for i := 0; i < 5; i++ {
		say(t, nt, 0, room, fmt.Sprintf("after the revocation %d", i))
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); <-tick.C {
		if n := counter(t, nt, 1, "parley_room_events_rejected_total", "reason", "no_consent"); n > base {
			t.Fatalf("A's node sent %v of its posts made after revoking B to B's node", n-base)
		}
	}
}
