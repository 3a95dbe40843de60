package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/localapi"
)

// HandMeta is the key of a tool result's _meta that carries the node's
// two-step hand-out of the pending items in it: {"agent": NAME, "hand":
// TOKEN}. The server asks the node for its items in two steps
// (localapi.WithTwoStep) and confirms the hand-out only once the result
// that carries it was written to the client whole; a result never written
// (the process killed, the client's pipe broken) is never confirmed, and
// the node offers its items to the agent again after its hand wait.
const HandMeta = "parley/hand"

// handMeta is HandMeta's value.
type handMeta struct {
	Agent string `json:"agent"`
	Hand  string `json:"hand"`
}

// ackTimeout bounds one confirmation's call to the node.
const ackTimeout = 5 * time.Second

// acker confirms hand-outs in the background; wait waits for those under
// way.
type acker struct {
	api *localapi.Client
	log *slog.Logger
	wg  sync.WaitGroup
}

func (a *acker) ack(m handMeta) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		defer cancel()
		if _, err := a.api.Ack(ctx, m.Agent, m.Hand); err != nil {
			// Unconfirmed, the items are offered again: shown twice.
			a.log.Debug("hand-out not confirmed; the node offers its items again", "agent", m.Agent, "err", err)
		}
	}()
}

func (a *acker) wait() { a.wg.Wait() }

// ackTransport is a transport whose connections confirm the hand-out of
// each tool result they wrote.
type ackTransport struct {
	sdk.Transport
	a *acker
}

// Connect implements sdk.Transport.
func (t ackTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &ackConn{Connection: c, a: t.a}, nil
}

// SupportsProtocolVersion implements sdk.ProtocolVersionSupporter as the
// wrapped transport does (one that does not serves every version).
func (t ackTransport) SupportsProtocolVersion(v string) bool {
	if s, ok := t.Transport.(sdk.ProtocolVersionSupporter); ok {
		return s.SupportsProtocolVersion(v)
	}
	return true
}

type ackConn struct {
	sdk.Connection
	a *acker
}

// Write implements sdk.Connection: once a tool result that carries a
// hand-out is written, the hand-out is confirmed. A write that fails
// confirms nothing.
func (c *ackConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := c.Connection.Write(ctx, msg); err != nil {
		return err
	}
	if res, ok := msg.(*jsonrpc.Response); ok && res.Error == nil {
		if m, ok := handOf(res.Result); ok {
			c.a.ack(m)
		}
	}
	return nil
}

// handOf reads the hand-out a result's _meta carries, if any.
func handOf(result json.RawMessage) (handMeta, bool) {
	if !bytes.Contains(result, []byte(`"`+HandMeta+`"`)) {
		return handMeta{}, false
	}
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(result, &r) != nil {
		return handMeta{}, false
	}
	var m handMeta
	if raw, ok := r.Meta[HandMeta]; !ok || json.Unmarshal(raw, &m) != nil || m.Agent == "" || m.Hand == "" {
		return handMeta{}, false
	}
	return m, true
}
