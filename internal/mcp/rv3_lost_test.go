package mcp_test

import (
	"context"
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
)

// lossyTransport is a server transport whose answers to tool calls are
// dropped while drop is set: the client went away after Parley wrote the
// result (the bytes sit in a pipe nobody reads, or the write failed).
type lossyTransport struct {
	sdk.Transport
	drop *atomic.Bool
}

func (t lossyTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return lossyConn{c, t.drop}, err
}

type lossyConn struct {
	sdk.Connection
	drop *atomic.Bool
}

func (c lossyConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if _, ok := m.(*jsonrpc.Response); ok && c.drop.Load() {
		return nil
	}
	return c.Connection.Write(ctx, m)
}

// Review rv3: a tool result hands out the agent's pending items on the
// node before the result reaches the client. When the client never gets
// that result (it exited or was killed right after the call, its pipe
// broke), the messages in it are lost for good: the next session of the
// same agent sees them neither among its pending items nor in parley_read
// (they count as read), with nothing to say they were never shown.
func TestRV3PendingItemsLostWithAResultTheClientNeverGot(t *testing.T) {
	nt := nodetest.Start(t, 1)
	b := connect(t, nt, 0, "b")
	call(t, b, "parley_register", map[string]any{"name": "beta"})

	var drop atomic.Bool
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	srv := mcp.New(mcp.Config{Client: c, Session: "a", ClientName: "bench", Project: "/p"})
	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, lossyTransport{st, &drop}) }()
	a, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	out, _ := call(t, b, "parley_room_open", map[string]any{"name": "pair", "members": []string{"alpha"}})
	room := out["room_id"].(string)
	call(t, a, "parley_read", map[string]any{"room": room}) // the invitation and the room's start, read
	call(t, b, "parley_say", map[string]any{"room": room, "text": "the words that get lost"})

	// alpha's client calls a tool and goes away before the result arrives.
	drop.Store(true)
	cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err = a.CallTool(cctx, &sdk.CallToolParams{Name: "parley_who", Arguments: map[string]any{}})
	ccancel()
	if err == nil {
		t.Fatal("the dropped result arrived")
	}
	a.Close()
	cancel()
	<-done

	// The agent's next session.
	again := connect(t, nt, 0, "a")
	reg, _ := call(t, again, "parley_register", map[string]any{"name": "alpha"})
	read, text := call(t, again, "parley_read", map[string]any{"room": room})
	if count("the words that get lost", reg, read) == 0 {
		t.Fatalf("the message handed out in a result the client never got is lost: neither pending nor unread (parley_read: %s)",
			strings.ReplaceAll(text, "\n", " | "))
	}
}
