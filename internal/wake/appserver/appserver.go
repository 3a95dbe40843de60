package appserver

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
)

// ErrClosed is returned once the server's output has ended.
var ErrClosed = errors.New("appserver: the app-server connection is closed")

// MaxLine is the longest line read from the server.
const MaxLine = 16 << 20

// Error is a JSON-RPC error from the server.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("app-server error %d: %s", e.Code, e.Message) }

// Message is one JSON-RPC message as read from the server.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Decode reads one line as a message: a request (id and method), a
// notification (method) or a response (id, and result or error).
func Decode(line []byte) (Message, error) {
	var m Message
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("appserver: not a JSON-RPC message: %w", err)
	}
	if dec.More() {
		return Message{}, errors.New("appserver: more than one value on a line")
	}
	switch {
	case m.Method != "":
	case len(m.ID) > 0 && (m.Result != nil || m.Error != nil):
	default:
		return Message{}, errors.New("appserver: a message with neither a method nor a result")
	}
	if len(m.ID) > 0 && m.ID[0] != '"' && (m.ID[0] < '0' || m.ID[0] > '9') && m.ID[0] != '-' {
		return Message{}, fmt.Errorf("appserver: bad id %s", m.ID)
	}
	return m, nil
}

// Client is a connection to one app-server. Its methods may be called from
// several goroutines.
type Client struct {
	w   io.Writer
	wmu sync.Mutex // serializes whole lines

	closed chan struct{} // closed when the read loop ends

	mu      sync.Mutex // protects the fields below
	next    int64
	pending map[string]chan Message
	turns   map[string]string // thread → its running turn ("" idle)
	err     error
}

// New starts a client on the server's output r and input w; it reads until
// r ends. Call Initialize before anything else.
func New(r io.Reader, w io.Writer) *Client {
	c := &Client{w: w, closed: make(chan struct{}), pending: map[string]chan Message{}, turns: map[string]string{}}
	go c.read(r)
	return c
}

// Done is closed when the server's output ends.
func (c *Client) Done() <-chan struct{} { return c.closed }

func (c *Client) read(r io.Reader) {
	defer close(c.closed)
	br := bufio.NewReaderSize(r, 64<<10)
	var rerr error
	for {
		line, long, err := readLine(br)
		if long {
			// A line too long to keep (an item's whole output, say) is
			// skipped, not the end of the connection.
			slog.Warn("app-server line longer than MaxLine skipped", "max", MaxLine)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rerr = err
			}
			if len(line) == 0 {
				break
			}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				break
			}
			continue
		}
		m, derr := Decode(line)
		if derr != nil {
			if err != nil {
				break
			}
			continue // a line we cannot read is not ours to answer
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			// A request of the server's (an approval): Parley decides nothing
			// for the person.
			// Written aside, so that reading never waits on writing.
			go c.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": Error{Code: -32601, Message: "Parley does not answer " + m.Method}}) //nolint:errcheck // the server may be gone
		case m.Method != "":
			c.notice(m)
		default:
			c.mu.Lock()
			ch := c.pending[string(m.ID)]
			delete(c.pending, string(m.ID))
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
		if err != nil {
			break // the last line, without its newline
		}
	}
	c.mu.Lock()
	c.err = rerr
	c.mu.Unlock()
}

// readLine reads one line without its newline. A line longer than MaxLine
// is read to its end and dropped: it returns no line, and long. err is the
// reader's (io.EOF at the end, with what the last line held).
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > MaxLine+1 {
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return line, long, err
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), long, nil
	}
}

// notice follows the threads' turns.
func (c *Client) notice(m Message) {
	var p struct {
		ThreadID string `json:"threadId"`
		Turn     struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.ThreadID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m.Method {
	case "turn/started":
		c.turns[p.ThreadID] = p.Turn.ID
	case "turn/completed":
		if c.turns[p.ThreadID] == p.Turn.ID || p.Turn.ID == "" {
			c.turns[p.ThreadID] = ""
		}
	}
}

func (c *Client) write(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(append(raw, '\n'))
	return err
}

// Call sends a request and waits for its response; result may be nil.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	c.next++
	id := fmt.Sprint(c.next)
	ch := make(chan Message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params}); err != nil {
		return fmt.Errorf("appserver: %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("appserver: %s: %w", method, m.Error)
		}
		if result != nil && m.Result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("appserver: %s: the answer: %w", method, err)
			}
		}
		return nil
	case <-c.closed:
		return fmt.Errorf("appserver: %s: %w", method, ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("appserver: %s: %w", method, ctx.Err())
	}
}

// Initialize opens the session with the server.
func (c *Client) Initialize(ctx context.Context, name, version string) error {
	params := map[string]any{"clientInfo": map[string]string{"name": name, "title": "Parley", "version": version}}
	if err := c.Call(ctx, "initialize", params, nil); err != nil {
		return err
	}
	return c.write(map[string]any{"jsonrpc": "2.0", "method": "initialized", "params": map[string]any{}})
}

// StartThread starts a thread in folder cwd and returns its ID.
func (c *Client) StartThread(ctx context.Context, cwd string) (string, error) {
	var res struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := c.Call(ctx, "thread/start", map[string]any{"cwd": cwd}, &res); err != nil {
		return "", err
	}
	if res.Thread.ID == "" {
		return "", errors.New("appserver: thread/start gave no thread id")
	}
	return res.Thread.ID, nil
}

// ResumeThread takes up an existing thread.
func (c *Client) ResumeThread(ctx context.Context, thread string) error {
	return c.Call(ctx, "thread/resume", map[string]any{"threadId": thread}, nil)
}

// Busy returns the thread's running turn ("" when it is idle).
func (c *Client) Busy(thread string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turns[thread]
}

// Deliver gives text to the thread: a new turn when it is idle
// (turn/start), the running turn otherwise (turn/steer). It reports
// whether it steered.
func (c *Client) Deliver(ctx context.Context, thread, text string) (steered bool, err error) {
	input := []map[string]string{{"type": "text", "text": text}}
	if turn := c.Busy(thread); turn != "" {
		err := c.Call(ctx, "turn/steer", map[string]any{"threadId": thread, "expectedTurnId": turn, "input": input}, nil)
		if err == nil {
			return true, nil
		}
		var rpc *Error
		if !errors.As(err, &rpc) {
			return true, err
		}
		// The turn ended meanwhile: start one.
	}
	var res struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := c.Call(ctx, "turn/start", map[string]any{"threadId": thread, "input": input}, &res); err != nil {
		return false, err
	}
	c.mu.Lock()
	if res.Turn.ID != "" && c.turns[thread] == "" {
		c.turns[thread] = res.Turn.ID
	}
	c.mu.Unlock()
	return false, nil
}
