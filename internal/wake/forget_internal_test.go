package wake

import (
	"context"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// noInbox knows no agent.
type noInbox struct{}

func (noInbox) Peek(context.Context, string) (localapi.Pending, error) {
	return localapi.Pending{}, localapi.Errorf(404, localapi.CodeUnknownAgent, "no such agent")
}

// forgetService runs a Service whose rechecks come only when the test
// sends on the returned channel (each send returns once Run took it, and
// the scan before it has ended), with the agents registered that agents
// holds.
func forgetService(t *testing.T, ctx context.Context, agents *atomic.Pointer[[]string]) (*Service, chan<- struct{}) {
	t.Helper()
	changes := make(chan struct{})
	s, err := New(Config{Inbox: noInbox{}, Changes: func() (<-chan struct{}, func()) { return changes, func() {} },
		Agents: func() []string { return *agents.Load() }, Recheck: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	t.Cleanup(func() { stop(); <-done })
	return s, changes
}

// A waiter between two of its waits (a Codex app-server handing a batch to
// its thread, an MCP channel pushing or backing off after a failed wait)
// whose session a newer waiter took over is ended at its next wait
// (WakeWaitRequest.After), also when its agent's registration lapsed for a
// moment meanwhile (the node swept it after the machine slept, the user
// unregistered it; `parley codex` and parley mcp bind it again at their
// next heartbeat). A first Service.forget dropped the agent's state at the
// first recheck it was not registered, with the ended entries that say a
// newer waiter came: the older waiter registered again and took the
// session's route, and the newer one, at its next wait, was the one ended
// ("another parley codex took over this thread"; found by a review).
func TestForgetKeepsWhatEndedAWaiterWhileItWaitsAgain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var agents atomic.Pointer[[]string]
	registered := []string{"codex-api"}
	agents.Store(&registered)
	s, changes := forgetService(t, ctx, &agents)

	wait := func(waiter string, after uint64) localapi.Wake {
		t.Helper()
		w, err := s.WakeWait(ctx, "codex-api", localapi.WakeWaitRequest{Kind: localapi.WakeAppServer, Session: "thread-1",
			Waiter: waiter, After: after, Seconds: 0})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	// The older parley codex waits, and hands what it got to the thread.
	old := wait("old", 0)
	// Meanwhile a newer parley codex of the same thread waits (and is
	// between two waits too).
	newer := wait("new", 0)
	if old.Superseded || newer.Superseded {
		t.Fatalf("first waits: %+v %+v", old, newer)
	}
	// The agent's registration lapses for a moment: two rechecks see it.
	none := []string{}
	agents.Store(&none)
	changes <- struct{}{}
	changes <- struct{}{}
	agents.Store(&registered)
	changes <- struct{}{}

	// The older waiter waits again: a newer one came since its answer.
	if w := wait("old", old.Seq); !w.Superseded {
		t.Errorf("the older waiter of thread-1, which a newer waiter took over while it handed a batch, is not ended at its next wait after its agent's registration lapsed for a moment (Service.forget dropped the ended entry): %+v", w)
	}
	if w := wait("new", newer.Seq); w.Superseded {
		t.Errorf("the newer waiter of thread-1 is ended at its next wait: the older one took the route back")
	}
}

// The service keeps no state for agent names it was merely given: a client
// of the local API that waits, or says busy or idle (POST …/wake/idle, as
// Codex's notify hook does), under many made-up names does not grow the
// node's memory for good. What ended a waiter's routes is kept a while (a
// waiter between two waits needs it), for the last maxLingering names; an
// idle mark keeps nothing. Before, each name got an agentState (with its
// ended entry, up to 64 sessions with their keys of up to 256 bytes each)
// that nothing dropped, and a first Service.forget kept every idle agent,
// registered or not (both found by reviews).
func TestMadeUpAgentNamesAreNotKeptForever(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		call  string
		names int
		most  int
		say   func(ctx context.Context, s *Service, agent string) error
	}{
		{"wait", 2000, maxLingering, func(ctx context.Context, s *Service, agent string) error {
			_, err := s.WakeWait(ctx, agent, localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: rand.Text(), Waiter: rand.Text()})
			return err
		}},
		{"idle", 200, 0, func(ctx context.Context, s *Service, agent string) error {
			return s.WakeIdle(ctx, agent, localapi.SessionRef{Session: rand.Text()})
		}},
	} {
		t.Run(tc.call, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var agents atomic.Pointer[[]string]
			none := []string{}
			agents.Store(&none)
			s, changes := forgetService(t, ctx, &agents)
			for i := range tc.names {
				if err := tc.say(ctx, s, "ghost-"+rand.Text()); err != nil {
					t.Fatalf("%s %d: %v", tc.call, i, err)
				}
			}
			changes <- struct{}{}
			changes <- struct{}{}
			var kept int
			if err := s.do(ctx, func(context.Context) { kept = len(s.agents) }); err != nil {
				t.Fatal(err)
			}
			if kept > tc.most {
				t.Fatalf("after %d %s calls of one made-up agent name each (none registered, none in any room, no route left), two rechecks later the service still keeps %d agent states (at most %d)", tc.names, tc.call, kept, tc.most)
			}
		})
	}
}
