package inbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
)

// TestReviewCallsForUnknownAgentsAreKeptForGood: a call of the local API
// for an agent name no agent holds (a peek, a take, a wait: a typo, a
// script that loops over names, an agent that renames itself each run)
// leaves that name's state in the inbox's memory for good: it is never
// dropped, unregistered or not.
func TestReviewCallsForUnknownAgentsAreKeptForGood(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	const n = 5000
	for i := range n {
		if _, err := ib(nt, 0).Peek(ctx, fmt.Sprintf("nobody-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := inbox.States(ib(nt, 0)); got >= n {
		t.Fatalf("after peeks for %d names no agent holds, the inbox keeps %d agents' states in memory", n, got)
	}
}

// TestReviewOwedAsksHoldTheirTextsInMemory: a member of a room asks the
// room (no addressee: every member agent owes it) over and over, each ask
// of the largest text an event carries. Each local agent in the room holds
// every such ask, text and all, in its in-memory state (state.owed) and in
// a store record of its own, for an hour (AskTTL), however many there are:
// the node's memory grows with what a remote member posts, once per local
// agent in the room.
func TestReviewOwedAsksHoldTheirTextsInMemory(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 0, "beta")
	mallory := register(t, nt, 1, "mallory")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "work", Members: []string{beta, mallory}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		_, err := ib(nt, 1).Get(ctx, res.RoomID)
		return err == nil
	}, "node 1 to hold the room")
	text := strings.Repeat("x", 60<<10)
	const n = 64
	for i := range n {
		if _, err := ib(nt, 1).Ask(ctx, "mallory", localapi.AskRequest{Room: res.RoomID, Text: fmt.Sprintf("%d %s", i, text)}); err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
	}
	total := 0
	for _, a := range []string{"alpha", "beta"} {
		nt.WaitFor(30*time.Second, func() bool {
			if _, err := ib(nt, 0).Peek(ctx, a); err != nil {
				t.Fatal(err)
			}
			k, _ := inbox.OwedTextBytes(ib(nt, 0), a)
			return k == n
		}, "%s to owe the %d asks", a, n)
		_, held := inbox.OwedTextBytes(ib(nt, 0), a)
		total += held
	}
	t.Logf("alpha and beta hold %d bytes of ask texts in memory", total)
	if total > 1<<20 {
		t.Fatalf("after %d asks of a remote member, node 0's inbox holds %.1f MiB of their texts in memory (a copy per local agent in the room), for an hour, with no bound on their number", n, float64(total)/(1<<20))
	}
}
