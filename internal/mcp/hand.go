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

// drop gives a hand-out back unconfirmed: the node offers its items to
// the agent again at once.
func (a *acker) drop(m handMeta) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		defer cancel()
		if _, err := a.api.AckShown(ctx, m.Agent, m.Hand, []string{}); err != nil {
			// Unconfirmed still, the items are offered again after the
			// node's hand wait.
			a.log.Debug("hand-out not given back; the node offers its items again after its wait", "agent", m.Agent, "err", err)
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
	a    *acker
	mu   sync.Mutex          // protects held
	held map[string]*heldAck // written results' hand-outs not confirmed yet, by request ID (idKey)
}

// heldAck is the hand-out of a written result, confirmed at the client's
// next message or once ackGrace passed with none.
type heldAck struct {
	m     handMeta
	timer *time.Timer
}

// ackGrace is how long a written result's hand-out waits for the client's
// next message before it is confirmed: a client that gave the call up
// (notifications/cancelled, crossing the result on its way) drops the
// result, and its items are then offered again, not lost.
const ackGrace = 500 * time.Millisecond

// Write implements sdk.Connection: once a tool result that carries a
// hand-out is written, the hand-out is confirmed at the client's next
// message or after ackGrace, unless the client cancelled that call. A
// write that fails confirms nothing.
func (c *ackConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := c.Connection.Write(ctx, msg); err != nil {
		return err
	}
	if res, ok := msg.(*jsonrpc.Response); ok && res.Error == nil {
		if m, ok := handOf(res.Result); ok {
			if ctx.Err() != nil {
				// The handler's call was cancelled: the client dropped
				// the result; its items are offered again.
				c.a.drop(m)
				return nil
			}
			key := idKey(res.ID.Raw())
			c.a.wg.Add(1)
			c.mu.Lock()
			if c.held == nil {
				c.held = make(map[string]*heldAck)
			}
			h := &heldAck{m: m}
			c.held[key] = h
			h.timer = time.AfterFunc(ackGrace, func() { c.settle(key, h, true) })
			c.mu.Unlock()
		}
	}
	return nil
}

// settle confirms (or, with confirm false, gives back) the held hand-out
// h of request key, if it is still held.
func (c *ackConn) settle(key string, h *heldAck, confirm bool) {
	c.mu.Lock()
	if c.held[key] != h {
		c.mu.Unlock()
		return
	}
	delete(c.held, key)
	c.mu.Unlock()
	h.timer.Stop()
	if confirm {
		c.a.ack(h.m)
	} else {
		c.a.drop(h.m)
	}
	c.a.wg.Done()
}

// Read implements sdk.Connection: a message of the client settles the
// hand-outs of the results written before it: notifications/cancelled
// for a request gives that one's back, anything else confirms them.
func (c *ackConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	cancelled := ""
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "notifications/cancelled" {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) == nil && len(p.RequestID) > 0 {
			d := json.NewDecoder(bytes.NewReader(p.RequestID))
			d.UseNumber()
			var v any
			if d.Decode(&v) == nil {
				cancelled = idKey(v)
			}
		}
	}
	c.mu.Lock()
	held := make(map[string]*heldAck, len(c.held))
	for k, h := range c.held {
		held[k] = h
	}
	c.mu.Unlock()
	for k, h := range held {
		c.settle(k, h, k != cancelled)
	}
	return msg, nil
}

// Close implements sdk.Connection: the hand-outs still held are confirmed
// (their results were written).
func (c *ackConn) Close() error {
	err := c.Connection.Close()
	c.mu.Lock()
	held := make(map[string]*heldAck, len(c.held))
	for k, h := range c.held {
		held[k] = h
	}
	c.mu.Unlock()
	for k, h := range held {
		c.settle(k, h, true)
	}
	return err
}

// idKey is the key of a JSON-RPC request ID: its JSON form.
func idKey(id any) string {
	b, _ := json.Marshal(id)
	return string(b)
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
