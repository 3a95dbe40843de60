package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	// WaitMS is the node's hand wait (Pending.HandWaitMS): the hand-out
	// is held for a cancellation a quarter of it at most.
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// ackTimeout bounds one confirmation's call to the node.
const ackTimeout = 5 * time.Second

// CancelGrace is how long a written result's hand-out waits for the
// client's notifications/cancelled of its call before it is confirmed (a
// quarter of the node's hand wait when that is less): a
// client that gave the call up (its user pressed Esc, its tool timeout
// ran out) drops the result when it comes, so its items go back to the
// node, to be offered again at once. A client sends the cancellation when
// it gives up, not when it learns of the result, so it comes well within
// this grace of the result's write whenever the two crossed.
const CancelGrace = 2 * time.Second

// acker confirms hand-outs in the background; end confirms those still
// held, and wait waits for the confirmations under way.
type acker struct {
	api *localapi.Client
	log *slog.Logger
	wg  sync.WaitGroup

	mu     sync.Mutex // protects the rest, and orders wg.Add before wait
	held   map[string]*heldHand
	gaveUp map[string]bool // calls cancelled before their results were written
	ended  bool
}

// maxGaveUp bounds acker.gaveUp: a client may cancel calls whose results
// never carry a hand-out.
const maxGaveUp = 256

// heldHand is a result's hand-out, from right before its write until it
// is confirmed or given back.
type heldHand struct {
	k         string
	m         handMeta
	t         *time.Timer // the grace, once written
	written   bool
	cancelled bool
}

// idKey is a request ID as a map key.
func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// hold takes m, the hand-out of the result of call id about to be
// written; written or unwritten follows the write.
func (a *acker) hold(id jsonrpc.ID, m handMeta) *heldHand {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := &heldHand{k: idKey(id), m: m}
	if a.gaveUp[h.k] {
		delete(a.gaveUp, h.k)
		h.cancelled = true
	}
	if old := a.held[h.k]; old != nil && old.written {
		// An ID the client used again while the first result was
		// held: that result was not cancelled in time (a timer that
		// fired meanwhile finds it replaced).
		old.t.Stop()
		a.send(old.m, nil)
	}
	if a.held == nil {
		a.held = make(map[string]*heldHand)
	}
	a.held[h.k] = h
	return h
}

// unwritten drops h, whose write failed: nothing is confirmed, and the
// node offers its items again after its hand wait.
func (a *acker) unwritten(h *heldHand) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held[h.k] == h {
		delete(a.held, h.k)
	}
}

// written starts h's grace: confirmed once it passed without a
// cancellation of the call, given back at once if the call was cancelled.
func (a *acker) written(h *heldHand) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held[h.k] != h {
		return
	}
	h.written = true
	switch {
	case h.cancelled:
		a.giveBack(h)
	case a.ended:
		delete(a.held, h.k)
		a.send(h.m, nil)
	default:
		grace := CancelGrace
		if h.m.WaitMS > 0 {
			grace = min(grace, time.Duration(h.m.WaitMS)*time.Millisecond/4)
		}
		h.t = time.AfterFunc(grace, func() { a.confirm(h) })
	}
}

// confirm confirms h once its grace passed.
func (a *acker) confirm(h *heldHand) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held[h.k] != h {
		return // given back (the timer and a cancellation crossed)
	}
	delete(a.held, h.k)
	a.send(h.m, nil)
}

// giveBack gives h's items back to the node, which offers them again at
// once. The caller holds a.mu.
func (a *acker) giveBack(h *heldHand) {
	delete(a.held, h.k)
	a.log.Debug("a tool call was cancelled when its result was written; its items are offered again", "agent", h.m.Agent)
	a.send(h.m, []string{})
}

// cancelled marks call id given up by the client, which drops its result:
// a hand-out it carries, written or to be written, is given back.
func (a *acker) cancelled(id jsonrpc.ID) {
	k := idKey(id)
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.held[k]
	switch {
	case h == nil:
		if len(a.gaveUp) >= maxGaveUp {
			clear(a.gaveUp)
		}
		if a.gaveUp == nil {
			a.gaveUp = make(map[string]bool)
		}
		a.gaveUp[k] = true
	case !h.written:
		h.cancelled = true // written gives it back
	case h.t.Stop():
		a.giveBack(h)
	}
}

// answered forgets a cancellation of call id once its result (of any
// kind) was written.
func (a *acker) answered(id jsonrpc.ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.gaveUp, idKey(id))
}

// end confirms every written hand-out still held (the client is gone
// without cancelling their calls, as after any written result) and every
// later one at once.
func (a *acker) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = true
	for k, h := range a.held {
		if h.written {
			h.t.Stop() // a timer that fired meanwhile finds it gone
			delete(a.held, k)
			a.send(h.m, nil)
		}
	}
}

// send confirms m to the node in the background: the items of shown
// alone when shown is not nil, the others offered again at once. The
// caller holds a.mu.
func (a *acker) send(m handMeta, shown []string) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		defer cancel()
		if _, err := a.api.AckShown(ctx, m.Agent, m.Hand, shown); err != nil {
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
// hand-out is written, the hand-out is confirmed, unless the client
// cancels the call within CancelGrace (Read). A write that fails confirms
// nothing.
func (c *ackConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	res, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.Connection.Write(ctx, msg)
	}
	m, hand := handMeta{}, false
	if res.Error == nil {
		m, hand = handOf(res.Result)
	}
	if !hand {
		err := c.Connection.Write(ctx, msg)
		if err == nil {
			c.a.answered(res.ID)
		}
		return err
	}
	// Held before the write, so that a cancellation read the moment it
	// is written finds it.
	h := c.a.hold(res.ID, m)
	if err := c.Connection.Write(ctx, msg); err != nil {
		c.a.unwritten(h)
		return err
	}
	c.a.written(h)
	return nil
}

// Read implements sdk.Connection: a notifications/cancelled of a call
// whose result was written gives that result's hand-out back.
func (c *ackConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && !req.IsCall() && req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.a.cancelled(id)
			}
		}
	}
	return msg, err
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
