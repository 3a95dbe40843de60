package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// The wake-up path in one node: an owed item with no route is told to the
// human once the limit passes; a route that comes later is still handed it,
// each kind once; the stop waiter gets it before the channel, a newer stop
// waiter of the session supersedes the older, a busy session ends its
// waiters; an item read drops out (and off the human's list).
func TestWakeRoutesInTurnThenTheHuman(t *testing.T) {
	t.Parallel() // waits out wake limits and waiters; sets no package knob
	net := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) { c.WakeLimit = time.Second }))
	n := net.Node(0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := n.Agents().Register(ctx, agents.RegisterRequest{Name: "bot", Session: "s1", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	w := n.Wake()
	unreached := func() int {
		for _, s := range w.WakeStatus(ctx) {
			if s.Agent == "bot" {
				return s.Unreached
			}
		}
		return 0
	}
	room, err := n.Inbox().OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "ops", Members: []string{"bot"}})
	if err != nil {
		t.Fatal(err)
	}
	// No route at all: the human is told once the limit has passed.
	nodetest.WaitFor(t, 20*time.Second, func() bool { return unreached() == 1 }, "the invitation to be reported unreached")
	c := localapi.NewClient(node.SocketPath(net.Home(0)))
	defer c.Close()
	if st, err := c.Status(ctx); err != nil || st.Unreached != 1 {
		t.Fatalf("status: %d unreached, %v", st.Unreached, err)
	}

	// A stop waiter that comes later still gets it, first; then a channel.
	got, err := w.WakeWait(ctx, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeStop, Session: "s1", Seconds: 20})
	if err != nil || len(got.Items) != 1 || got.Items[0].Kind != "invitation" {
		t.Fatalf("stop waiter: %+v, %v", got, err)
	}
	got, err = w.WakeWait(ctx, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: "s1", Seconds: 20})
	if err != nil || len(got.Items) != 1 {
		t.Fatalf("channel: %+v, %v", got, err)
	}
	// Handed to both kinds: a new stop waiter is not woken for it again.
	got, err = w.WakeWait(ctx, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeStop, Session: "s1", Seconds: 2})
	if err != nil || len(got.Items) != 0 || got.Superseded {
		t.Fatalf("stop waiter for nothing new: %+v, %v", got, err)
	}
	// Read (a take): off the human's list.
	if _, err := n.Inbox().Take(ctx, "bot"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool { return unreached() == 0 }, "the read invitation to leave the list")

	// A newer stop waiter supersedes the older; a busy session ends it.
	type res struct {
		w   localapi.Wake
		err error
	}
	wait := func(session string) chan res {
		ch := make(chan res, 1)
		go func() {
			v, err := w.WakeWait(ctx, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeStop, Session: session, Seconds: 30})
			ch <- res{v, err}
		}()
		return ch
	}
	registered := func(k int) func() bool {
		return func() bool {
			for _, s := range w.WakeStatus(ctx) {
				if s.Agent == "bot" && len(s.Routes) == k {
					return true
				}
			}
			return false
		}
	}
	older := wait("s1")
	nodetest.WaitFor(t, 10*time.Second, registered(1), "the first waiter")
	newer := wait("s1")
	if r := <-older; r.err != nil || !r.w.Superseded {
		t.Fatalf("older waiter: %+v", r)
	}
	nodetest.WaitFor(t, 10*time.Second, registered(1), "the newer waiter")
	other := wait("s2") // another session of the agent is not busy
	nodetest.WaitFor(t, 10*time.Second, registered(2), "the other session's waiter")
	if err := w.WakeBusy(ctx, "bot", localapi.SessionRef{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if r := <-newer; r.err != nil || !r.w.Superseded {
		t.Fatalf("waiter of a busy session: %+v", r)
	}
	// An ask to the agent wakes the waiter left.
	if _, err := n.Inbox().Ask(ctx, "human", localapi.AskRequest{Room: room.RoomID, Text: "status?", To: "bot"}); err != nil {
		t.Fatal(err)
	}
	if r := <-other; r.err != nil || len(r.w.Items) != 1 || r.w.Items[0].Kind != "ask" || r.w.Items[0].Text != "status?" {
		t.Fatalf("waiter for the ask: %+v", r)
	}
	// A muted agent is not woken: its waiter gets nothing, and nobody is told.
	api := localapi.NewClient(node.SocketPath(net.Home(0)))
	defer api.Close()
	if _, err := api.Mute(ctx, localapi.ModerateRequest{Agent: "bot"}); err != nil {
		t.Fatal(err)
	}
	muted := wait("s2")
	nodetest.WaitFor(t, 10*time.Second, registered(1), "the muted agent's waiter")
	if _, err := n.Inbox().Ask(ctx, "human", localapi.AskRequest{Room: room.RoomID, Text: "still there?", To: "bot"}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-muted:
		t.Fatalf("a muted agent was woken: %+v", r)
	case <-time.After(3 * time.Second): // three wake limits
	}
	if u := unreached(); u != 0 {
		t.Fatalf("%d items of a muted agent told to the human", u)
	}
	if _, err := api.Unmute(ctx, localapi.ModerateRequest{Agent: "bot"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Inbox().Ask(ctx, "human", localapi.AskRequest{Room: room.RoomID, Text: "and now?", To: "bot"}); err != nil {
		t.Fatal(err)
	}
	if r := <-muted; r.err != nil || len(r.w.Items) == 0 {
		t.Fatalf("the unmuted agent's waiter: %+v", r)
	}

	// Bad routes are refused.
	for _, req := range []localapi.WakeWaitRequest{{Kind: "smoke", Session: "s"}, {Kind: localapi.WakeStop}} {
		if _, err := w.WakeWait(ctx, "bot", req); !localapi.IsCode(err, localapi.CodeBadRequest) {
			t.Fatalf("%+v: %v", req, err)
		}
	}
	if err := w.WakeTerminal(ctx, "bot", localapi.TerminalRequest{Socket: "/nonexistent/tmux.sock", Pane: "%1"}); err == nil {
		t.Fatal("a terminal route on no tmux server was taken")
	}
}

// Status counts the unreached items of the agents `parley who` lists, which
// it marks: an agent whose registration ended is not counted (status said
// "parley who marks the agents" while who listed none).
func TestStatusCountsUnreachedOfListedAgents(t *testing.T) {
	t.Parallel() // waits out the wake limit; sets no package knob
	net := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) { c.WakeLimit = time.Second }))
	n := net.Node(0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := n.Agents().Register(ctx, agents.RegisterRequest{Name: "bot", Session: "s1", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Inbox().OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "ops", Members: []string{"bot"}}); err != nil {
		t.Fatal(err)
	}
	c := localapi.NewClient(node.SocketPath(net.Home(0)))
	defer c.Close()
	status := func() int {
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Unreached
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool { return status() == 1 }, "the invitation to be reported unreached")
	if err := n.Agents().Unregister(ctx, "bot"); err != nil {
		t.Fatal(err)
	}
	if k := status(); k != 0 {
		t.Fatalf("status counts %d unreached items of an agent who no longer lists", k)
	}
}
