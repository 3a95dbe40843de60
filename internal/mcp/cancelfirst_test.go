package mcp

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// handedMessage gives agent beta of a fresh node a message in a two-step
// hand-out, and returns the node's client and that hand-out. The node's
// hand wait is far longer than any test waits: what is offered again
// here is so because it was given back.
func handedMessage(t *testing.T, text string) (*nodetest.Net, *localapi.Client, handMeta) {
	t.Helper()
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) { c.HandWait = 10 * time.Minute }))
	ctx := context.Background()
	for _, n := range []string{"alpha", "beta"} {
		if _, err := nt.Node(0).Agents().Register(ctx, agents.RegisterRequest{Name: n, TTLSeconds: 600}); err != nil {
			t.Fatal(err)
		}
	}
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	t.Cleanup(func() { c.Close() })
	if _, err := c.OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "r", Members: []string{"beta"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Say(ctx, "alpha", localapi.SayRequest{Room: "r", Text: text}); err != nil {
		t.Fatal(err)
	}
	var m handMeta
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		p, err := c.Take(localapi.WithTwoStep(ctx), "beta")
		if err != nil {
			t.Fatal(err)
		}
		if p.Hand != "" && pendingText(p, text) {
			m = handMeta{Agent: "beta", Hand: p.Hand, WaitMS: p.HandWaitMS}
			return true
		}
		return false
	}, "beta to be handed the message")
	return nt, c, m
}

func pendingText(p localapi.Pending, text string) bool {
	for _, it := range p.Items {
		if strings.Contains(it.Text, text) {
			return true
		}
	}
	return false
}

// A call the client cancelled before its result was written (the tool was
// still running) gives the result's hand-out back once it is written: the
// client has retired the call and drops the result.
func TestCancelledBeforeItsResultIsWrittenGivesTheHandOutBack(t *testing.T) {
	_, c, m := handedMessage(t, "cancelled while running")
	a := &acker{api: c, log: slog.New(slog.DiscardHandler)}
	id := callID(t, 7)
	a.cancelled(id)
	h := a.hold(id, m)
	a.written(h)
	a.end()
	a.wait()
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		p, err := c.Take(context.Background(), "beta")
		return err == nil && pendingText(p, "cancelled while running")
	}, "the message of the cancelled call's result to be offered again")
}

// A written result whose call is not cancelled is confirmed once the grace
// passed: nothing is offered again.
func TestUncancelledResultIsConfirmedAfterTheGrace(t *testing.T) {
	nt, c, m := handedMessage(t, "shown once")
	a := &acker{api: c, log: slog.New(slog.DiscardHandler)}
	id := callID(t, 8)
	a.cancelled(callID(t, 9)) // another call's cancellation
	h := a.hold(id, m)
	a.written(h)
	nodetest.WaitFor(t, 20*time.Second, func() bool { return nt.Node(0).Inbox().OpenHands("beta") == 0 },
		"the hand-out to be confirmed after the grace")
	a.end()
	a.wait()
	if p, err := c.Take(context.Background(), "beta"); err != nil || pendingText(p, "shown once") {
		t.Fatalf("a confirmed hand-out's message was offered again (err %v)", err)
	}
}

// callID is the request ID n, as a client's JSON would give it.
func callID(t *testing.T, n float64) jsonrpc.ID {
	id, err := jsonrpc.MakeID(n)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
