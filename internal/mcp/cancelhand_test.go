package mcp_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// holding is a client transport that, once armed, holds the first tool
// result carrying a hand-out until released: the result is on its way to
// the client (written by the server) while the client gives up the call.
type holding struct {
	sdk.Transport
	armed   atomic.Bool
	result  []byte // the result held
	held    chan struct{}
	release chan struct{}
}

func (t *holding) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &holdingConn{Connection: c, t: t}, nil
}

type holdingConn struct {
	sdk.Connection
	t *holding
}

func (c *holdingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && c.t.armed.Load() && bytes.Contains(r.Result, []byte(mcp.HandMeta)) {
		c.t.armed.Store(false)
		c.t.result = r.Result
		close(c.t.held)
		<-c.t.release
	}
	return msg, err
}

// TestMCPCancelledCallDoesNotConfirmItsHandOut: a client that gives up a
// tool call (its user pressed Esc, its tool timeout ran out) sends
// notifications/cancelled and drops the result when it comes; the server
// had written that result, and a written result confirms its hand-out, so
// the message it carried is never shown to the agent: lost, where a
// failed write offers it again (TestMCPUnwrittenResultIsHandedAgain). Now
// the server holds a written result's confirmation for a cancellation of
// its call (mcp.CancelGrace) and, on one, gives the items back to the
// node, which offers them again at once: the hand wait here is far longer
// than the test waits.
func TestMCPCancelledCallDoesNotConfirmItsHandOut(t *testing.T) {
	const wait = 10 * time.Minute
	nt, a := handNet(t, wait)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	srv := mcp.New(mcp.Config{Client: c, Session: "b", ClientName: "bench", Project: "/p"})
	st, ct := sdk.NewInMemoryTransports()
	ht := &holding{Transport: ct, held: make(chan struct{}), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	t.Cleanup(func() { cancel(); <-done })
	b, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ht, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rb, _ := call(t, b, "parley_register", map[string]any{"name": "beta"})
	call(t, a, "parley_room_open", map[string]any{"name": "r", "members": []string{rb["address"].(string)}})
	call(t, a, "parley_say", map[string]any{"room": "r", "text": "given up with its call"})

	ht.armed.Store(true)
	cctx, ccancel := context.WithCancel(ctx)
	called := make(chan error, 1)
	go func() {
		_, err := b.CallTool(cctx, &sdk.CallToolParams{Name: "parley_who", Arguments: map[string]any{}})
		called <- err
	}()
	select {
	case <-ht.held:
	case <-time.After(20 * time.Second):
		t.Fatal("no tool result with a hand-out came")
	}
	if !bytes.Contains(ht.result, []byte("given up with its call")) {
		t.Fatalf("the result held does not carry the message: %s", ht.result)
	}
	ccancel() // the client gives the call up: it never reads this result
	if err := <-called; err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	close(ht.release)

	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _ := call(t, b, "parley_who", nil)
		return pendingHas(out, "given up with its call")
	}, "the message of the result the client gave up to be shown again")
}
