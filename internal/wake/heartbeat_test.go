package wake_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/wake"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A terminal route's beat renews its agent, and gives it the state of its
// pane, only while the route's session holds the name: never another
// session's agent, not even one that takes the name between the beat's
// look at who holds it and the renewal (before, the look and the renewal
// were two steps, and a session that took the name in between got the
// pane's state, and its registration renewed by a pane not its own).
func TestAgentHeartbeatNeverBeatsAnotherSessionsAgent(t *testing.T) {
	n := nodetest.Start(t, 1).Node(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	beat := wake.AgentHeartbeat(n.Agents())
	// The pane of session s1 says busy, over and over.
	var wg sync.WaitGroup
	bctx, stop := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for bctx.Err() == nil {
			err := beat(bctx, "bot", "s1", "busy")
			if err != nil && !errors.Is(err, wake.ErrUnregistered) && bctx.Err() == nil {
				t.Errorf("beat: %v", err)
				return
			}
		}
	}()
	defer func() { stop(); wg.Wait() }()
	// Session s2 takes the name again and again (idle, as a fresh
	// registration is); its agent must never show busy.
	hits, tries := 0, 1000
	for range tries {
		if err := n.Agents().Unregister(ctx, "bot"); err != nil && !errors.Is(err, agents.ErrUnknownAgent) {
			t.Fatal(err)
		}
		if _, err := n.Agents().Session(ctx, agents.SessionRequest{Session: "s2", Name: "bot", TTLSeconds: 600}); err != nil {
			t.Fatal(err)
		}
		for _, a := range n.Agents().List() {
			if a.Name == "bot" && a.Session == "s2" && a.State == "busy" {
				hits++
			}
		}
	}
	if hits > 0 {
		t.Fatalf("%d of %d times, another session's agent got the pane's state", hits, tries)
	}
}
