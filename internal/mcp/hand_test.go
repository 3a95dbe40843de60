package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// breaking is a transport whose connection fails the write of the first
// tool result that carries a hand-out once armed, as a broken pipe does.
type breaking struct {
	sdk.Transport
	armed, broke atomic.Bool
}

func (t *breaking) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &breakingConn{Connection: c, t: t}, nil
}

type breakingConn struct {
	sdk.Connection
	t *breaking
}

func (c *breakingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok && c.t.armed.Load() && bytes.Contains(r.Result, []byte(mcp.HandMeta)) {
		c.t.armed.Store(false)
		c.t.broke.Store(true)
		return errors.New("write |1: broken pipe")
	}
	return c.Connection.Write(ctx, msg)
}

// handNet is one node with a short hand wait, and sessions a (alpha) and
// b (beta) of it, with a message of alpha's for beta in room "r".
func handNet(t *testing.T, wait time.Duration) (*nodetest.Net, *sdk.ClientSession) {
	t.Helper()
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.HandWait = wait
	}))
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	return nt, a
}

func pendingHas(out map[string]any, text string) bool {
	for _, p := range out["pending"].([]any) {
		if s, _ := p.(map[string]any)["text"].(string); strings.Contains(s, text) {
			return true
		}
	}
	return false
}

// A tool result written to the client confirms its hand-out: nothing stays
// open, and nothing is offered again once the hand wait passed.
func TestMCPWrittenResultConfirmsItsHandOut(t *testing.T) {
	const wait = time.Second
	nt, a := handNet(t, wait)
	b := connect(t, nt, 0, "b")
	rb, _ := call(t, b, "parley_register", map[string]any{"name": "beta"})
	call(t, a, "parley_room_open", map[string]any{"name": "r", "members": []string{rb["address"].(string)}})
	call(t, a, "parley_say", map[string]any{"room": "r", "text": "once only"})
	shows := func() bool { out, _ := call(t, b, "parley_who", nil); return pendingHas(out, "once only") }
	nodetest.WaitFor(t, 20*time.Second, shows, "beta to be shown the message")
	nodetest.WaitFor(t, 10*time.Second, func() bool { return nt.Node(0).Inbox().OpenHands("beta") == 0 },
		"the hand-outs of beta's written results to be confirmed")
	if nodetest.Poll(3*wait, shows) {
		t.Fatal("a message of a written tool result was offered again")
	}
}

// A tool result whose write fails is not confirmed: its items are handed to
// the agent's next session once the hand wait passed.
func TestMCPUnwrittenResultIsHandedAgain(t *testing.T) {
	nt, a := handNet(t, time.Second)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	srv := mcp.New(mcp.Config{Client: c, Session: "b", ClientName: "bench", Project: "/p"})
	st, ct := sdk.NewInMemoryTransports()
	bt := &breaking{Transport: st}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, bt) }()
	b, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := call(t, b, "parley_register", map[string]any{"name": "beta"})
	call(t, a, "parley_room_open", map[string]any{"name": "r", "members": []string{rb["address"].(string)}})
	call(t, a, "parley_say", map[string]any{"room": "r", "text": "not lost"})
	bt.armed.Store(true)
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	_, _ = b.CallTool(cctx, &sdk.CallToolParams{Name: "parley_who", Arguments: map[string]any{}})
	ccancel()
	if !bt.broke.Load() {
		t.Fatal("no tool result with a hand-out was written")
	}
	b.Close()
	cancel()
	<-done

	b2 := connect(t, nt, 0, "b") // the agent's next session (the same key)
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _ := call(t, b2, "parley_who", nil)
		return pendingHas(out, "not lost")
	}, "the next session to be handed the message the failed write held")
}
