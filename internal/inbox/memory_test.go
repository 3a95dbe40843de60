package inbox_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
)

// TestOwedAsksKeepNoTextsInMemory checks that the asks a remote member
// puts to a room (no addressee: every local agent in it owes each one),
// many and large, are not held text and all in the inbox's memory, a copy
// per local agent, for as long as they are owed: the texts stay on disk
// and are read when an ask is shown, in full and as a reminder.
func TestOwedAsksKeepNoTextsInMemory(t *testing.T) {
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
		in, err := ib(nt, 1).Get(ctx, res.RoomID)
		return err == nil && slices.Contains(in.Agents, mallory)
	}, "node 1 to hold the room, mallory in it")
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
	p, err := ib(nt, 0).Take(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) == 0 || p.Items[0].Kind != "ask" || p.Items[0].Text != "0 "+text {
		t.Fatalf("alpha's take does not show the first ask in full: %d items", len(p.Items))
	}
	if k, held := inbox.OwedTextBytes(ib(nt, 0), "alpha"); k != n || held != 0 {
		t.Fatalf("after a take alpha owes %d asks and holds %d bytes of their texts", k, held)
	}
	first := p.Items[0].ID
	p, err = ib(nt, 0).Take(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	reminded := false
	for _, it := range p.Items {
		if it.ID == first {
			reminded = true
			if it.Kind != "reminder" || it.Text != "0 "+text {
				t.Fatalf("the first ask is shown again as %q with %d bytes of text", it.Kind, len(it.Text))
			}
		}
	}
	if !reminded {
		t.Fatal("the first ask, shown, is not reminded of")
	}
}

// TestCallsForUnknownAgentsLeaveNoState checks that the calls of the local
// API for names no agent of the node holds (a peek, a take, a wait: a
// typo, a script that goes over names, an agent that renames itself each
// run), which are refused, leave no state in the inbox's memory once they
// return, while the state of a registered agent is kept.
func TestCallsForUnknownAgentsLeaveNoState(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	if _, err := ib(nt, 0).Peek(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := range n {
		name := fmt.Sprintf("nobody-%d", i)
		var err error
		switch i % 3 {
		case 0:
			_, err = ib(nt, 0).Peek(ctx, name)
		case 1:
			_, err = ib(nt, 0).Take(ctx, name)
		default:
			_, err = ib(nt, 0).Wait(ctx, name, localapi.WaitRequest{})
		}
		// Refused (nothing waits for a name the node does not know), and
		// the refusal's look leaves nothing behind either.
		if !localapi.IsCode(err, localapi.CodeUnknownAgent) {
			t.Fatalf("call for %s: %v, want unknown_agent", name, err)
		}
	}
	if got := inbox.States(ib(nt, 0)); got != 1 {
		t.Fatalf("after calls for %d names no agent holds, and a peek of alpha, the inbox keeps %d agents' states in memory, want 1 (alpha's)", n, got)
	}
}
