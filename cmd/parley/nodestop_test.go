package main

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// stoppingNode serves a stand-in node's socket in a new home, and returns
// the home. Each request is read whole; answer gives the JSON body of a
// 200 answer, or false to go away instead, without an answer (a reset, as
// the kernel sends for a killed process's socket with data unread).
func stoppingNode(t *testing.T, answer func(*http.Request) (string, bool)) string {
	t.Helper()
	home, err := os.MkdirTemp("", "pst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	l, err := net.Listen("unix", nodeSocket(home))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					req.Body.Close()
					body, ok := answer(req)
					if !ok {
						c.(*net.UnixConn).CloseRead()
						return
					}
					resp := &http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{"Content-Type": {"application/json"}},
						ContentLength: int64(len(body)), Body: readCloser{strings.NewReader(body)}}
					if resp.Write(c) != nil {
						return
					}
				}
			}(c)
		}
	}()
	return home
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// A node that stops while a command's request is under way (here: it reads
// the request, then its end of the socket goes away, as when it is killed
// with kill -9 during `room say`) makes the command say that the node
// stopped, that the post may or may not have been stored, and how to look:
// it printed the transport's error ("read unix …: connection reset by
// peer"). A read cut off says the node stopped before it answered.
func TestCLINodeStoppedDuringARequest(t *testing.T) {
	t.Parallel()
	home := stoppingNode(t, func(*http.Request) (string, bool) { return "", false })
	_, errs, code := run(t, "--home", home, "room", "say", "design", "hello")
	if code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("say: exit %d, stderr %q; want exit 1 and one line", code, errs)
	}
	for _, want := range []string{"the node stopped while this command was under way", "may or may not", "parley room log", "--home " + home + " up"} {
		if !strings.Contains(errs, want) {
			t.Errorf("say: stderr %q lacks %q", errs, want)
		}
	}
	if strings.Contains(errs, "connection reset") && !strings.Contains(errs, "the node stopped") {
		t.Errorf("say: raw transport error: %q", errs)
	}
	_, errs, code = run(t, "--home", home, "status")
	if code != 1 || !strings.Contains(errs, "the node stopped before it answered") {
		t.Errorf("status: exit %d, stderr %q; want the node stopped before it answered", code, errs)
	}
	_, errs, code = run(t, "--home", home, "room", "say", "design", "hello", "--json")
	if code != 1 || !strings.Contains(errs, `"error"`) || !strings.Contains(errs, "may or may not") {
		t.Errorf("say --json: exit %d, stderr %q", code, errs)
	}
}

// TestCLIAskWaitCutOffIsExplained (found by a review): `room ask` posts its
// ask, then waits for the reply in a second request, and the node stops
// during the wait. The ask command wraps the wait's error (fmt.Errorf
// "…%w…", which writes its text at once); the explanation of the stop must
// still reach what is printed, beside the ask's ID.
func TestCLIAskWaitCutOffIsExplained(t *testing.T) {
	t.Parallel()
	home := stoppingNode(t, func(req *http.Request) (string, bool) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/ask") {
			return `{"ask_id":"q7ask0000000000000000000000000000000000000000000000a","room":{"room_id":"r","name":"design"},"pending":{}}`, true
		}
		return "", false // the wait: the node goes away
	})
	_, errs, code := run(t, "--home", home, "room", "ask", "design", "is the tag v2.0.0?", "--wait", "5s")
	if code == 0 {
		t.Fatalf("ask: exit 0, stderr %q", errs)
	}
	if !strings.Contains(errs, "q7ask000") {
		t.Fatalf("ask: stderr %q does not name the ask posted", errs)
	}
	if !strings.Contains(errs, "--home "+home+" up") {
		t.Errorf("ask: the wait was cut off by the node stopping, but stderr does not say how to start it again: %q", errs)
	}
}
