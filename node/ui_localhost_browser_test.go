package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// v6Squatter is another local user's program on [::1] at the dashboard's
// port, which the node (on 127.0.0.1 only) leaves free while it runs: it
// changes the one-time code of any address it is sent for the token, at
// the node itself.
type v6Squatter struct {
	node string // the dashboard's 127.0.0.1:PORT
	mu   sync.Mutex
	seen []string
	tok  string
}

func (q *v6Squatter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q.mu.Lock()
	q.seen = append(q.seen, r.Method+" "+r.URL.String())
	q.mu.Unlock()
	if code := r.URL.Query().Get("c"); code != "" {
		body, _ := json.Marshal(map[string]string{"code": code})
		resp, err := http.Post("http://"+q.node+"/ui/ticket", "application/json", bytes.NewReader(body))
		if err == nil {
			var v struct{ Token string }
			json.NewDecoder(resp.Body).Decode(&v) //nolint:errcheck // checked below
			resp.Body.Close()
			q.mu.Lock()
			q.tok = v.Token
			q.mu.Unlock()
		}
	}
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte("<title>Parley</title>")) //nolint:errcheck
}

// The dashboard takes "localhost" as its Host as well as 127.0.0.1, so an
// address of it with localhost opens it. But the node listens on
// 127.0.0.1 alone, and the browser tries localhost's IPv6 address first:
// another local user who binds [::1] at the dashboard's port, while the
// node runs, gets whatever the browser sends to localhost:PORT, the
// one-time code of an address among it, which it changes for the token at
// the node before the page can.
func TestDashboardLocalhostIsNotAnotherUsersPort(t *testing.T) {
	t.Skip("finding: the node takes Host localhost but binds 127.0.0.1 alone; another user on [::1]:PORT gets what the browser sends to localhost:PORT, and the token for the code in it")
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c0.Close()
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	u, err := url.Parse(info.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(u.Host)
	// The node accepts localhost as the dashboard's Host.
	if code, _ := uiDo(t, "GET", "http://"+u.Host+"/ui/page", "", map[string]string{"Host": "localhost:" + port}, ""); code != http.StatusOK {
		t.Fatalf("the page at localhost:%s is answered %d", port, code)
	}
	ln, err := net.Listen("tcp6", "[::1]:"+port)
	if err != nil {
		t.Skipf("no IPv6 loopback here, or [::1]:%s held: %v", port, err)
	}
	q := &v6Squatter{node: u.Host}
	srv := &http.Server{Handler: q, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
	}()
	b := browser(t)
	run(t, b, "open the dashboard at localhost", chromedp.Navigate("http://localhost:"+port+u.RequestURI()))
	q.mu.Lock()
	seen, tok := q.seen, q.tok
	q.mu.Unlock()
	if tok != "" && tok == uiToken(t, nt.Home(0)) {
		t.Fatalf("another user's program on [::1]:%s, bound while the node runs, got %v from the browser and changed the code for the dashboard's token", port, seen)
	}
	if len(seen) > 0 {
		t.Fatalf("another user's program on [::1]:%s, bound while the node runs, got the browser's requests to localhost:%s: %v", port, port, seen)
	}
}

// tokenRelay is another local user's program on [::1] at the dashboard's
// port: it passes every request on to the node (127.0.0.1 at the same
// port, so the node's proof holds for the page) and keeps the
// Authorization headers it passes.
type tokenRelay struct {
	node string
	mu   sync.Mutex
	auth []string
}

func (q *tokenRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a := r.Header.Get("Authorization"); a != "" {
		q.mu.Lock()
		q.auth = append(q.auth, a)
		q.mu.Unlock()
	}
	r.URL.Scheme, r.URL.Host, r.RequestURI = "http", q.node, ""
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n]) //nolint:errcheck
			w.(http.Flusher).Flush()
		}
		if err != nil {
			return
		}
	}
}

func (q *tokenRelay) got(tok string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, a := range q.auth {
		if a == "Bearer "+tok {
			return true
		}
	}
	return false
}

// A dashboard tab the user opened at localhost:PORT (the browser found
// nothing on [::1] then, and went on to 127.0.0.1) sends its token to
// another local user's program that binds [::1] at that port later, while
// the node runs: the page asks for a proof on a new connection, which the
// browser makes to [::1] first, and the program passes it on to the node,
// whose proof signs the port alone.
func TestDashboardLocalhostTabSendsNoTokenToIPv6(t *testing.T) {
	t.Skip("finding: an open dashboard tab at localhost:PORT sends its token to a program another user binds on [::1]:PORT while the node runs; the node's proof, relayed, signs the port alone")
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c0.Close()
	room, err := c0.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	u, err := url.Parse(info.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(u.Host)
	b := browser(t)
	run(t, b, "open the dashboard at localhost", chromedp.Navigate("http://localhost:"+port+u.RequestURI()))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	clickJS(t, b, `#rooms li[data-room="`+room.RoomID+`"]`)
	ln, err := net.Listen("tcp6", "[::1]:"+port)
	if err != nil {
		t.Skipf("no IPv6 loopback here, or [::1]:%s held: %v", port, err)
	}
	q := &tokenRelay{node: u.Host}
	srv := &http.Server{Handler: q, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // closed below
	defer srv.Close()
	tok := uiToken(t, nt.Home(0))
	// The page's posts go on the connection it holds to the node until
	// the node closes it (idle a minute): the user posts again after a while.
	i, last := 0, time.Time{}
	leaked := nodetest.Poll(140*time.Second, func() bool {
		if q.got(tok) {
			return true
		}
		if time.Since(last) < 65*time.Second {
			return false
		}
		i, last = i+1, time.Now()
		run(t, b, "post", chromedp.SendKeys(chromedp.CSS("#text"), fmt.Sprintf("post %d", i)), chromedp.Click(chromedp.CSS("#send")))
		waitJS(t, b, 30*time.Second, `document.getElementById("text").value === ""`, "the post sent")
		return q.got(tok)
	})
	if leaked {
		t.Fatalf("the open tab at localhost:%s sent its token (post %d) to another user's program on [::1]:%s, bound while the node runs, which passed the node's proof on", port, i, port)
	}
}
