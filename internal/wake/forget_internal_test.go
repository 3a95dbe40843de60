package wake

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// noInbox knows no agent.
type noInbox struct{}

func (noInbox) Peek(context.Context, string) (localapi.Pending, error) {
	return localapi.Pending{}, localapi.Errorf(404, localapi.CodeUnknownAgent, "no such agent")
}

// The service keeps no state for agent names it was merely given: a client
// of the local API that waits (or says busy) under many made-up names, each
// wait with its session and waiter key, does not grow the node's memory
// for good. Before, each name got an agentState (with its ended entry, up
// to 64 sessions with their keys of up to 256 bytes each) that nothing
// dropped (found by a review).
func TestMadeUpAgentNamesAreNotKeptForever(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := New(Config{Inbox: noInbox{}, Changes: func() (<-chan struct{}, func()) { return make(chan struct{}), func() {} },
		Recheck: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	defer func() { stop(); <-done }()

	const names = 2000
	for i := range names {
		agent := "ghost-" + rand.Text()
		if _, err := s.WakeWait(ctx, agent, localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: rand.Text(), Waiter: rand.Text()}); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	// The rechecks drop them.
	deadline := time.Now().Add(10 * time.Second)
	var kept int
	for time.Now().Before(deadline) {
		if err := s.do(ctx, func(context.Context) { kept = len(s.agents) }); err != nil {
			t.Fatal(err)
		}
		if kept == 0 {
			return
		}
		tick := time.NewTimer(50 * time.Millisecond)
		<-tick.C
	}
	t.Fatalf("after %d waits of one made-up agent name each (none registered, none in any room, no route left), the service still keeps %d agent states", names, kept)
}
