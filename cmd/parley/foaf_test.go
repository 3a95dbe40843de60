package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestCLIFriendOfAFriendJoins: A invites its contact B; B invites E, its
// own contact and a stranger to A, who starts from B alone. E joins, holds
// what was said before it came, and talks with A through the room.
func TestCLIFriendOfAFriendJoins(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB, homeE := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "e")
	a := up(t, homeA, "--listen", loopback)
	b := up(t, homeB, "--listen", loopback, "--bootstrap", a.addr())
	up(t, homeE, "--listen", loopback, "--bootstrap", b.addr())
	idB, idE := peerID(t, homeB), peerID(t, homeE)
	befriend(t, homeA, homeB, idB)
	befriend(t, homeB, homeE, idE)

	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", homeA, "room", "create", "foaf")
	for i := range 20 {
		if _, errs, code := run(t, "--home", homeA, "room", "say", room.RoomID, "before E "+string(rune('a'+i))); code != 0 {
			t.Fatal(errs)
		}
	}
	if _, errs, code := run(t, "--home", homeA, "room", "invite", room.RoomID, idB); code != 0 {
		t.Fatal(errs)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool { return logHas(t, homeB, room.RoomID, "before E t") }, "B to hold the room")
	if _, errs, code := run(t, "--home", homeB, "room", "invite", room.RoomID, idE); code != 0 {
		t.Fatal(errs)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool { return logHas(t, homeE, room.RoomID, "before E t") },
		"E to hold what was said before it came")
	if _, errs, code := run(t, "--home", homeE, "room", "say", room.RoomID, "hello from E"); code != 0 {
		t.Fatal(errs)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool { return logHas(t, homeA, room.RoomID, "hello from E") }, "A to get E's message")
	var list []struct {
		RoomID  string   `json:"room_id"`
		Name    string   `json:"name"`
		Members []string `json:"members"`
	}
	runJSON(t, &list, "--home", homeE, "room", "list")
	if len(list) != 1 || list[0].Name != "foaf" || len(list[0].Members) != 3 {
		t.Fatalf("E's room list: %+v", list)
	}
	if n := metric(t, homeE, "parley_room_sync_backoffs_total", ""); n != 0 {
		t.Fatalf("E backed off %v times", n)
	}
}
