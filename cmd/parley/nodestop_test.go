package main

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// A node that stops while a command's request is under way (here: it reads
// the request, then its end of the socket goes away, as when it is killed
// with kill -9 during `room say`) makes the command say that the node
// stopped, that the post may or may not have been stored, and how to look:
// it printed the transport's error ("read unix …: connection reset by
// peer"). A read cut off says the node stopped before it answered.
func TestCLINodeStoppedDuringARequest(t *testing.T) {
	t.Parallel()
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
			// Read the whole request, as the node does before it stores a
			// post, then go away without an answer; a reset, as the
			// kernel sends for a killed process's socket with data unread.
			if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				req.Body.Close()
			}
			c.(*net.UnixConn).CloseRead()
			c.Close()
		}
	}()
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
