package wake

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// A waiter that names an answer of the node's run before this one, whose
// clock was ahead (the clock was set back across the restart), is still
// older than a waiter of the same session that registered in this run:
// it is ended, and the newer one keeps its route. Before, the seq it named
// was larger than this run's, so it did not count as superseded, and its
// registration ended the newer waiter's route.
func TestWaiterOfARunWithItsClockAheadIsOlder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := New(Config{Inbox: noInbox{}, Changes: func() (<-chan struct{}, func()) { return make(chan struct{}), func() {} },
		Agents: func() []string { return []string{"coder"} }})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	defer func() { stop(); <-done }()

	// The newer waiter (this run's) waits.
	newer := make(chan localapi.Wake, 1)
	go func() {
		w, _ := s.WakeWait(ctx, "coder", localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: "s1", Waiter: "new", Seconds: 30})
		newer <- w
	}()
	deadline := time.Now().Add(10 * time.Second)
	for routes := 0; routes == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the newer waiter never registered")
		}
		if err := s.do(ctx, func(context.Context) { routes = len(s.state("coder").routes) }); err != nil {
			t.Fatal(err)
		}
	}
	// The older waiter names the answer the run before gave it, an hour
	// ahead of this run's clock.
	var seq uint64
	if err := s.do(ctx, func(context.Context) { seq = s.seq }); err != nil {
		t.Fatal(err)
	}
	w, err := s.WakeWait(ctx, "coder", localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: "s1", Waiter: "old",
		After: seq + uint64(time.Hour), Seconds: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !w.Superseded {
		t.Errorf("the waiter of the run before was not told a newer waiter took over: %+v", w)
	}
	select {
	case w := <-newer:
		t.Fatalf("the newer waiter's route was ended by the older one: %+v", w)
	default:
	}
}
