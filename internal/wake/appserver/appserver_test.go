package appserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/poll"
)

// fakeServer is a small app-server: one thread; a turn runs until the
// test ends it; it records the turn/start and turn/steer inputs, and asks
// the client for an approval once.
type fakeServer struct {
	out io.Writer

	mu      sync.Mutex
	turn    string
	n       int
	calls   []string // "start TEXT" or "steer TURN TEXT"
	refused []string // the error messages of approvals the client refused
}

func (f *fakeServer) send(v any) {
	raw, _ := json.Marshal(v)
	f.out.Write(append(raw, '\n')) //nolint:errcheck // the pipe lives as long as the test
}

func (f *fakeServer) serve(in io.Reader) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ThreadID       string `json:"threadId"`
				ExpectedTurnID string `json:"expectedTurnId"`
				Input          []struct {
					Type, Text string
				} `json:"input"`
			} `json:"params"`
			Error *Error `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		text := ""
		if len(m.Params.Input) > 0 {
			text = m.Params.Input[0].Text
		}
		f.mu.Lock()
		switch m.Method {
		case "initialize":
			f.send(map[string]any{"id": m.ID, "result": map[string]any{"userAgent": "fake/1"}})
		case "initialized":
			f.send(map[string]any{"id": 99, "method": "item/commandExecution/requestApproval", "params": map[string]any{"threadId": "th-1"}})
		case "thread/start":
			f.send(map[string]any{"id": m.ID, "result": map[string]any{"thread": map[string]any{"id": "th-1"}}})
		case "turn/start":
			f.n++
			f.turn = fmt.Sprintf("turn-%d", f.n)
			f.calls = append(f.calls, "start "+text)
			f.send(map[string]any{"method": "turn/started", "params": map[string]any{"threadId": "th-1", "turn": map[string]any{"id": f.turn}}})
			f.send(map[string]any{"id": m.ID, "result": map[string]any{"turn": map[string]any{"id": f.turn, "status": "inProgress"}}})
		case "turn/steer":
			if m.Params.ExpectedTurnID != f.turn || f.turn == "" {
				f.send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32600, "message": "no such turn"}})
				break
			}
			f.calls = append(f.calls, "steer "+m.Params.ExpectedTurnID+" "+text)
			f.send(map[string]any{"id": m.ID, "result": map[string]any{"turnId": f.turn}})
		case "":
			if string(m.ID) == "99" && m.Error != nil {
				f.refused = append(f.refused, m.Error.Message)
			}
		}
		f.mu.Unlock()
	}
}

func (f *fakeServer) endTurn() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.send(map[string]any{"method": "turn/completed", "params": map[string]any{"threadId": "th-1", "turn": map[string]any{"id": f.turn, "status": "completed"}}})
	f.turn = ""
}

func (f *fakeServer) snapshot() ([]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...), append([]string(nil), f.refused...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll.Until(20*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// Idle: the text starts a turn; busy: it steers the running turn; after
// turn/completed, it starts a new one. Approvals are refused, not granted.
func TestDeliverStartsOrSteers(t *testing.T) {
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	f := &fakeServer{out: fromServer}
	go f.serve(toServer)
	c := New(clientIn, clientOut)
	t.Cleanup(func() { fromServer.Close(); toServer.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Initialize(ctx, "parley", "test"); err != nil {
		t.Fatal(err)
	}
	th, err := c.StartThread(ctx, "/tmp")
	if err != nil || th != "th-1" {
		t.Fatalf("thread %q: %v", th, err)
	}
	if steered, err := c.Deliver(ctx, th, "first ask"); err != nil || steered {
		t.Fatalf("idle delivery: steered %v, %v", steered, err)
	}
	waitFor(t, "the turn to be known", func() bool { return c.Busy(th) == "turn-1" })
	if steered, err := c.Deliver(ctx, th, "second ask"); err != nil || !steered {
		t.Fatalf("busy delivery: steered %v, %v", steered, err)
	}
	f.endTurn()
	waitFor(t, "the turn to end", func() bool { return c.Busy(th) == "" })
	if steered, err := c.Deliver(ctx, th, "third ask"); err != nil || steered {
		t.Fatalf("delivery after the turn: steered %v, %v", steered, err)
	}
	// The refusal is the client's answer to a request the server sent at
	// initialized; it travels on its own, so wait for the server to read it.
	waitFor(t, "the approval's answer", func() bool { _, r := f.snapshot(); return len(r) > 0 })
	calls, refused := f.snapshot()
	want := []string{"start first ask", "steer turn-1 second ask", "start third ask"}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	if len(refused) != 1 {
		t.Fatalf("approval answers: %q", refused)
	}
	fromServer.Close()
	<-c.Done()
	if err := c.Call(ctx, "thread/start", nil, nil); err == nil {
		t.Fatal("a call after the server went")
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"id":1,"result":{}}`, `{"method":"turn/started","params":{"threadId":"t","turn":{"id":"x"}}}`,
		`{"id":"a","method":"x"}`, `{"id":{},"result":1}`, `[]`, `{"id":1}`, `{} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		if m.Method == "" && len(m.ID) == 0 {
			t.Fatalf("accepted %q with neither method nor id", b)
		}
	})
}
