package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestLineTransportAnswersBadLines feeds the transport malformed lines
// between good ones: each bad line gets a JSON-RPC error (with its id when
// it has a usable one) and the good ones still come through.
func TestLineTransportAnswersBadLines(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// The pings read are never answered: the end of input is passed on
	// after EndGrace.
	conn, err := (&LineTransport{In: inR, Out: outW, EndGrace: 10 * time.Millisecond}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	answers := bufio.NewScanner(outR)
	answers.Buffer(make([]byte, 1<<20), 1<<20)
	good := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	for _, tc := range []struct {
		name, line string
		code       int64
		id         string
	}{
		{"not json", "hello", jsonrpc.CodeParseError, "null"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"meth`, jsonrpc.CodeParseError, "null"},
		{"a number", "42", jsonrpc.CodeInvalidRequest, "null"},
		{"a batch", "[" + good + "]", jsonrpc.CodeInvalidRequest, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, jsonrpc.CodeInvalidRequest, "null"},
		{"no jsonrpc", `{"id":3,"method":"ping"}`, jsonrpc.CodeInvalidRequest, "3"},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":"x","method":"ping"}`, jsonrpc.CodeInvalidRequest, `"x"`},
		{"no method", `{"jsonrpc":"2.0","id":4}`, jsonrpc.CodeInvalidRequest, "4"},
		{"deep", strings.Repeat("[", 10000) + strings.Repeat("]", 10000), jsonrpc.CodeInvalidRequest, "null"},
		{"too large", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{"text":"` + strings.Repeat("x", 3*MaxLine) + `"}}}`, jsonrpc.CodeInvalidRequest, "5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			go func() { io.WriteString(inW, tc.line+"\n") }()
			if !answers.Scan() {
				t.Fatalf("no answer: %v", answers.Err())
			}
			var a struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(answers.Bytes(), &a); err != nil {
				t.Fatalf("answer %s: %v", answers.Bytes(), err)
			}
			if a.Error.Code != tc.code || string(a.ID) != tc.id || a.Error.Message == "" {
				t.Fatalf("answer %s, want code %d id %s", answers.Bytes(), tc.code, tc.id)
			}
			// The next good line is still served.
			go func() { io.WriteString(inW, good+"\n\n") }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "ping" {
				t.Fatalf("read %#v", msg)
			}
		})
	}
	inW.Close()
	if _, err := conn.Read(context.Background()); err != io.EOF {
		t.Fatalf("after the end of input: %v", err)
	}
}

// TestLineTransportFinishesRequestsAtEndOfInput: at the end of the input
// the requests already read are still answered before the end is passed
// on (the SDK writes nothing once it sees it), and one left unanswered
// (a parley_wait whose caller has gone) holds the end back no longer than
// EndGrace.
func TestLineTransportFinishesRequestsAtEndOfInput(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/call"}` + "\n"
	read := func(conn interface {
		Read(context.Context) (jsonrpc.Message, error)
	}, within time.Duration) (jsonrpc.Message, error) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		return conn.Read(ctx)
	}
	t.Run("answered", func(t *testing.T) {
		conn, err := (&LineTransport{In: strings.NewReader(req), Out: io.Discard, EndGrace: time.Hour}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		msg, err := read(conn, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// The input is at its end, but the request is not answered yet.
		if _, err := read(conn, 100*time.Millisecond); err != context.DeadlineExceeded {
			t.Fatalf("read with a request unanswered at the end of input: %v; want it to wait", err)
		}
		res, err := jsonrpc2Response(msg.(*jsonrpc.Request).ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(context.Background(), res); err != nil {
			t.Fatal(err)
		}
		if _, err := read(conn, 5*time.Second); err != io.EOF {
			t.Fatalf("read once every request is answered: %v; want io.EOF", err)
		}
	})
	t.Run("cut", func(t *testing.T) {
		conn, err := (&LineTransport{In: strings.NewReader(req), Out: io.Discard, EndGrace: 50 * time.Millisecond}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := read(conn, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := read(conn, 5*time.Second); err != io.EOF {
			t.Fatalf("read with a request unanswered past EndGrace: %v; want io.EOF", err)
		}
	})
}

// jsonrpc2Response is an empty result for the request id.
func jsonrpc2Response(id jsonrpc.ID) (*jsonrpc.Response, error) {
	msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + mustJSON(id.Raw()) + `,"result":{}}`))
	if err != nil {
		return nil, err
	}
	return msg.(*jsonrpc.Response), nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func FuzzCheckLine(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[]`, `{"id":{}}`, `"x"`, `{"jsonrpc":"2.0","result":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, bad := check(line, len(line))
		if (msg == nil) == (bad == nil) {
			t.Fatalf("check(%q) = %v, %v: want exactly one", line, msg, bad)
		}
		if bad != nil && bad.ID != nil && !validID(bad.ID) {
			t.Fatalf("answer id %s is not a string or number", bad.ID)
		}
	})
}
