package contacts_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/rooms"
)

// TestContactRoomChurnKeepsRecordsBounded: a contact (a modified build)
// makes a room, invites this node (its invite opens the room at once: a
// trusted contact's), removes it, and again. MaxRoomsPerInviter bounded
// the rooms its invites held open, not the records they left: each room
// this node was removed from stays recorded as left, with its events, for
// good (and in recovery.json's room list), so the churn grew the disk
// without bound (6 cycles, 6 records kept with a bound of 2). Now such
// rooms count towards MaxRoomsPerInviter, and the contact's invites past
// it wait for the user.
func TestContactRoomChurnKeepsRecordsBounded(t *testing.T) {
	const A, B = 0, 1
	nt := startNet(t, 2)
	nt.ConnectAll()
	befriend(t, nt, A, B, time.Hour)
	old := rooms.MaxRoomsPerInviter.Load()
	rooms.MaxRoomsPerInviter.Store(2)
	defer rooms.MaxRoomsPerInviter.Store(old)
	ctx := context.Background()
	const cycles = 6
	var ids []identity.RoomID
	held := false
	for i := range cycles {
		id, err := mgr(nt, A).CreateRoom(ctx, fmt.Sprintf("churn-%d", i), "", "human")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if _, err := mgr(nt, A).Invite(ctx, id, nt.ID(B), "human"); err != nil {
			t.Fatalf("cycle %d: invite: %v", i, err)
		}
		if slices.ContainsFunc(mgr(nt, B).Invites(), func(w rooms.WaitingInvite) bool { return w.Room == id }) {
			held = true
			break
		}
		nt.WaitFor(15*time.Second, func() bool {
			ms, err := mgr(nt, B).Members(id)
			return err == nil && len(ms) == 2
		}, "cycle %d: B in the room", i)
		if _, err := mgr(nt, A).Remove(ctx, id, nt.ID(B), "human"); err != nil {
			t.Fatalf("cycle %d: remove: %v", i, err)
		}
		nt.WaitFor(15*time.Second, func() bool { _, left := mgr(nt, B).LeftRoom(id); return left },
			"cycle %d: B out of the room", i)
	}
	kept := 0
	for _, id := range ids {
		if _, err := mgr(nt, B).Get(id); err == nil {
			kept++
		} else if _, left := mgr(nt, B).LeftRoom(id); left {
			kept++
		}
	}
	if bound := int(rooms.MaxRoomsPerInviter.Load()); kept > bound || !held {
		t.Fatalf("after %d rooms opened and closed by one contact, B keeps %d of their records (bound %d); an invite past the bound waits for the user: %v",
			len(ids), kept, bound, held)
	}
}

func mustRoom(t *testing.T, s string) identity.RoomID {
	t.Helper()
	id, err := identity.ParseRoomID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
