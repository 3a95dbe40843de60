package rooms_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/rooms"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestBoardClaimWaitingForAnInviteCatchUpLeavesTheBoardFree: node 1
// opened node 0's board room on an invite, and its catch-up with node 0
// stalls (node 0 gone offline mid-way: joinAfterInvite retries for two
// minutes). bob's claim on node 1 waits for node 1 to be a member of that
// room (its only board room), and fails after the wait saying why; the
// board is free meanwhile: another agent's reads (and Claims for who,
// Notices for every agent's inbox, the invite round) do not wait behind
// it. A review found the claim posting (and so waiting) while holding the
// board's mutex: every board call on the node waited 10 s.
func TestBoardClaimWaitingForAnInviteCatchUpLeavesTheBoardFree(t *testing.T) {
	nt := startNet(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const project = "stall"
	if _, err := nt.Node(0).Board().Claim(ctx, "alice", board.ClaimRequest{Project: project, Paths: []string{"zzz/**"}, TTL: time.Hour, Note: "work"}); err != nil {
		t.Fatal(err)
	}
	v, err := nt.Node(0).Board().Board(ctx, project)
	if err != nil || len(v.Rooms) != 1 {
		t.Fatalf("board: %+v, %v", v, err)
	}
	id := identity.RoomID(v.Rooms[0])
	for i := range 300 {
		if _, err := mgr(nt, 0).Say(ctx, id, rooms.SayArgs{Agent: "alice", Text: strings.Repeat("history ", 100) + string(rune('a'+i%26))}); err != nil {
			t.Fatal(err)
		}
	}
	defer rooms.SetAskLimit(1)() // a catch-up of many rounds: node 0 goes in the middle of it
	waitConnected(t, nt, 0, 1)
	if _, err := mgr(nt, 0).Invite(ctx, id, nt.ID(1), "alice"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { _, err := mgr(nt, 1).Get(id); return err == nil }, "node 1 to open the room")
	nt.Partition([]int{0}, []int{1})
	if in, _ := mgr(nt, 1).Get(id); slices.Contains(in.Members, nt.ID(1)) {
		t.Skip("node 1 caught up before the partition: not tested")
	}

	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := nt.Node(1).Board().Claim(ctx, "bob", board.ClaimRequest{Project: project, Paths: []string{"a.go"}, TTL: time.Hour, Note: "work"})
		done <- err
	}()
	// Another agent reads the board meanwhile, again and again for 3 s.
	var slowest time.Duration
	for time.Since(start) < 3*time.Second {
		t0 := time.Now()
		if _, err := nt.Node(1).Board().Board(ctx, project); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(t0))
	}
	err = <-done
	t.Logf("bob's claim: %v after %v; slowest Board read meanwhile %v", err, time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond))
	if slowest > 2*time.Second {
		t.Errorf("a board read on node 1 waited %v behind bob's claim waiting for the invite catch-up", slowest.Round(time.Millisecond))
	}
	if !errors.Is(err, rooms.ErrNotMember) || !strings.Contains(err.Error(), "catching up with its inviter") {
		t.Errorf("bob's claim while node 1 is not yet in: %v, want it refused saying node 1 is catching up", err)
	}
}
