package contacts_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/rooms"
)

// TestExpiredContactLeavesTheMesh: A and B share a room, alone, and their
// certificate ends. A refuses B from then on (an expired contact is cut
// off), and must stop sending it its posts too. An expiry is no stored
// change of the contact book, so nothing rebuilt the room's mesh, and B,
// in A's mesh, got every post A made after its certificate ended.
func TestExpiredContactLeavesTheMesh(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	befriend(t, nt, 1, 0, 4*time.Second)
	room := createRoom(t, nt, 0)
	invite(t, nt, 0, 1, room)
	say(t, nt, 0, room, "before")
	nt.WaitFor(10*time.Second, func() bool { return has(nt, 1, room, rooms.KindMessage, nt.ID(0), "before") }, "B to get A's post")
	nt.WaitFor(15*time.Second, func() bool { return errors.Is(svc(nt, 0).Allowed(nt.ID(1)), consent.ErrExpired) },
		"the certificate to end")
	// Post until three posts in a row reach B's node no more.
	reached := func() float64 {
		return counter(t, nt, 1, "parley_room_events_rejected_total", "reason", "no_consent")
	}
	quiet := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i, deadline := 0, time.Now().Add(15*time.Second); quiet < 3; i++ {
		if time.Now().After(deadline) {
			t.Fatal("A's node still sends its posts to B's node, whose certificate ended")
		}
		base := reached()
		say(t, nt, 0, room, fmt.Sprintf("after the end %d", i))
		got := false
		for until := time.Now().Add(time.Second); time.Now().Before(until) && !got; <-tick.C {
			got = reached() > base
		}
		if got {
			quiet = 0
		} else {
			quiet++
		}
	}
}
