package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultEndGrace is how long, at the end of its input, a LineTransport
// waits for the next answer to a request it read before it ends.
const DefaultEndGrace = 2 * time.Second

// Limits of one incoming line (one JSON-RPC message).
const (
	// MaxLine is the longest line served; a longer one is refused without
	// being held in memory.
	MaxLine = 1 << 20
	// MaxDepth is the deepest nesting of arrays and objects in a line.
	MaxDepth = 64
)

// LineTransport serves MCP's stdio framing, one JSON-RPC message per line,
// on In and Out, and checks every line before the SDK sees it: a line that
// is not JSON, not one object, without "jsonrpc": "2.0", with an id that is
// neither a string nor a number, nested deeper than MaxDepth or longer than
// MaxLine is answered with a JSON-RPC error (its id, when one can be read,
// else null), and the next line is served. One bad line never ends the
// session.
//
// At the end of In the requests already read are finished before the
// connection reports it: their answers are written as they come, and the
// end is passed on once every one is answered, or once EndGrace passes
// without an answer (a request that waits on others, such as parley_wait,
// is then cut: its caller has gone).
type LineTransport struct {
	In     io.Reader
	Out    io.Writer
	Logger *slog.Logger // nil discards
	// EndGrace is how long, at the end of In, the connection waits for the
	// next answer to a request it read; zero means DefaultEndGrace.
	EndGrace time.Duration

	mu   sync.Mutex // protects conn
	conn *lineConn
}

// Notify writes a JSON-RPC notification of any method on the connection
// (the SDK sends only the methods it knows), between whole messages.
func (t *LineTransport) Notify(method string, params any) error {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return errors.New("mcp: not connected")
	}
	raw, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
	if err != nil {
		return err
	}
	return c.writeLine(raw)
}

var _ sdk.Transport = (*LineTransport)(nil)

// Connect implements sdk.Transport.
func (t *LineTransport) Connect(context.Context) (sdk.Connection, error) {
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	grace := t.EndGrace
	if grace <= 0 {
		grace = DefaultEndGrace
	}
	c := &lineConn{out: t.Out, log: log, incoming: make(chan lineMsg), closed: make(chan struct{}),
		grace: grace, open: make(map[jsonrpc.ID]int), answered: make(chan struct{}, 1)}
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	go c.readLoop(bufio.NewReaderSize(t.In, 64<<10))
	return c, nil
}

type lineMsg struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	log      *slog.Logger
	incoming chan lineMsg
	closed   chan struct{}
	once     sync.Once

	wmu sync.Mutex // serializes writes of whole lines
	out io.Writer

	grace    time.Duration
	omu      sync.Mutex         // protects open
	open     map[jsonrpc.ID]int // requests read and not yet answered, by id
	answered chan struct{}      // signalled when one of them is answered
}

// readLoop reads lines until EOF, handing good messages to Read and
// answering bad ones. At EOF it waits for the requests it handed on to be
// answered (see finish), then hands on the end. It ends at EOF or when the
// connection closes (a read of stdin that never returns leaves it blocked;
// nothing else waits on it).
func (c *lineConn) readLoop(r *bufio.Reader) {
	for {
		line, size, err := readLine(r, MaxLine)
		if len(bytes.TrimSpace(line)) > 0 || size > MaxLine {
			if msg, bad := check(line, size); bad != nil {
				c.log.Warn("refused a malformed MCP message", "bytes", size, "err", bad.Message)
				c.answer(bad)
			} else {
				c.opened(msg)
				if !c.deliver(lineMsg{msg: msg}) {
					return
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.log.Debug("mcp input failed", "err", err)
			}
			c.finish()
			c.deliver(lineMsg{err: io.EOF})
			return
		}
	}
}

// opened counts msg, if it is a request that wants an answer, as open.
func (c *lineConn) opened(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.omu.Lock()
		c.open[req.ID]++
		c.omu.Unlock()
	}
}

// closedBy counts the request msg answers, if any, as answered.
func (c *lineConn) closedBy(msg jsonrpc.Message) {
	res, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	c.omu.Lock()
	if n := c.open[res.ID]; n > 1 {
		c.open[res.ID] = n - 1
	} else {
		delete(c.open, res.ID)
	}
	c.omu.Unlock()
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

// finish waits, at the end of the input, until every request read is
// answered, or grace passes without an answer, or the connection closes.
// Until the end is handed on the SDK still writes answers; after it, it
// cancels the requests left and writes nothing more.
func (c *lineConn) finish() {
	t := time.NewTimer(c.grace)
	defer t.Stop()
	for {
		c.omu.Lock()
		n := len(c.open)
		c.omu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
			t.Reset(c.grace)
		case <-t.C:
			c.log.Debug("end of mcp input: requests left unanswered", "requests", n)
			return
		case <-c.closed:
			return
		}
	}
}

func (c *lineConn) deliver(m lineMsg) bool {
	select {
	case c.incoming <- m:
		return true
	case <-c.closed:
		return false
	}
}

// readLine reads one line without its line end, and its size. Past max
// bytes it keeps only the first max (to find the id) and counts the rest as
// it skips it.
func readLine(r *bufio.Reader, max int) (line []byte, size int, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		size += len(chunk)
		if room := max - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r"), size, err
	}
}

// wireError is a JSON-RPC error answer for a line.
type wireError struct {
	ID      json.RawMessage
	Code    int64
	Message string
}

// check validates one line and decodes it.
func check(line []byte, size int) (jsonrpc.Message, *wireError) {
	if size > MaxLine {
		return nil, &wireError{ID: idOf(line), Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("request too large: %d bytes, over the limit of %d bytes (texts are at most 64 KiB)", size, MaxLine)}
	}
	if d := depth(line); d > MaxDepth {
		return nil, &wireError{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("request nested %d deep, over the limit of %d", d, MaxDepth)}
	}
	if !json.Valid(line) {
		return nil, &wireError{Code: jsonrpc.CodeParseError, Message: "parse error: the line is not valid JSON"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return nil, &wireError{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: a JSON-RPC message is one JSON object (batches are not supported)"}
	}
	id, ok := obj["id"]
	if ok && !validID(id) {
		return nil, &wireError{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: id must be a string or a number"}
	}
	if v, ok := obj["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		return nil, &wireError{ID: id, Code: jsonrpc.CodeInvalidRequest, Message: `invalid request: "jsonrpc" must be "2.0"`}
	}
	if m, ok := obj["method"]; ok {
		var s string
		if json.Unmarshal(m, &s) != nil || s == "" {
			return nil, &wireError{ID: id, Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: method must be a non-empty string"}
		}
	} else if _, res := obj["result"]; !res {
		if _, e := obj["error"]; !e {
			return nil, &wireError{ID: id, Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: no method"}
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, &wireError{ID: id, Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("invalid request: %v", err)}
	}
	return msg, nil
}

// validID reports whether raw is a string or a number.
func validID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// idOf reads the id of a request from the start of a line that is too long
// to decode: the value of "id" at the top level, if it comes before the
// cut.
func idOf(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if k == "id" && validID(v) {
			return v
		}
	}
	return nil
}

// depth is the deepest nesting of arrays and objects in b (strings
// skipped).
func depth(b []byte) int {
	d, top, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case inStr && c == '"':
			inStr = false
		case inStr:
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			d++
			top = max(top, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return top
}

// answer writes a JSON-RPC error answer.
func (c *lineConn) answer(e *wireError) {
	id := e.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	raw, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{e.Code, e.Message}})
	if err != nil {
		return // fixed types: cannot fail
	}
	if err := c.writeLine(raw); err != nil {
		c.log.Debug("mcp error answer not written", "err", err)
	}
}

func (c *lineConn) writeLine(raw []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.out.Write(append(raw, '\n'))
	return err
}

// Read implements sdk.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m.msg, m.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements sdk.Connection.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcp: encode message: %w", err)
	}
	err = c.writeLine(raw)
	c.closedBy(msg)
	return err
}

// Close implements sdk.Connection.
func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements sdk.Connection.
func (c *lineConn) SessionID() string { return "" }
