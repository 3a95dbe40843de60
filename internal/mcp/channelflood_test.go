package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/manual"
	"github.com/parley-mesh/parley/node/nodetest"
)

// countingNotifier counts the channel notifications pushed into the
// session and their characters.
type countingNotifier struct {
	mu    sync.Mutex // guards the fields below
	n     int
	chars int
}

func (c *countingNotifier) Notify(method string, params any) error {
	if method != ChannelMethod {
		return errors.New("not a channel notification: " + method)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	c.chars += utf8.RuneCountInString(params.(ChannelParams).Content)
	return nil
}

func (c *countingNotifier) count() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.chars
}

// TestChannelFloodIsOnePush: a member floods an idle agent with asks; the
// channel route wakes its session with one notification per wake, as the
// other routes do (a Stop hook's one text, a terminal's one paste of at
// most manual.MaxLen), the rest counted in it ("… and N more"). Before,
// it pushed one notification per item handed: some fifty at once (as many
// as an inbox's PendingBudget lets a peek list), each a message of its own
// in the session.
func TestChannelFloodIsOnePush(t *testing.T) {
	t.Parallel()
	ctx, n, srv, agent, room := channelNode(t)
	if _, err := n.Inbox().Take(ctx, agent); err != nil { // the invitation
		t.Fatal(err)
	}
	const asks = 100
	for i := range asks {
		if _, err := n.Inbox().Ask(ctx, "human", localapi.AskRequest{Room: room, To: agent, Text: fmt.Sprintf("ask %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	c := &countingNotifier{}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.channel(cctx, c)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	nodetest.WaitFor(t, 20*time.Second, func() bool { k, _ := c.count(); return k > 0 }, "a push")
	// The route had the items once: wait for the node to hold the channel
	// route again (its next wait), by then every push of the wake is made.
	nodetest.WaitFor(t, 20*time.Second, func() bool { return channelRoutes(ctx, n, agent) == 1 }, "the route's next wait")
	k, chars := c.count()
	if k != 1 || chars > manual.MaxLen+200 {
		t.Fatalf("a flood of %d asks made %d channel notifications (%d characters) in one wake", asks, k, chars)
	}
}
