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
	"strings"
	"sync"
	"syscall"
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
	ln := squatV6(t, port)
	if ln == nil {
		// The node holds [::1] at its port: the browser at localhost
		// reaches the node there.
		b := browser(t)
		run(t, b, "open the dashboard at localhost", chromedp.Navigate("http://localhost:"+port+u.RequestURI()))
		waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream at localhost")
		return
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

// squatV6 binds [::1] at the dashboard's port, as another local user's
// program would: nil when the port is held there (by the node, which
// binds [::1] beside 127.0.0.1 at start). It skips the test where the host
// has no IPv6 loopback.
func squatV6(t *testing.T, port string) net.Listener {
	t.Helper()
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	probe.Close()
	ln, err := net.Listen("tcp6", "[::1]:"+port)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return ln
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
	ln := squatV6(t, port)
	if ln == nil {
		// The node holds [::1] at its port: no other program gets the
		// tab's requests, and its posts reach the node.
		run(t, b, "post", chromedp.SendKeys(chromedp.CSS("#text"), "post"), chromedp.Click(chromedp.CSS("#send")))
		waitJS(t, b, 30*time.Second, `document.getElementById("text").value === ""`, "the post sent")
		return
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

// The node holds [::1] at its dashboard's port beside 127.0.0.1, and lets
// both go when it stops; a start that finds [::1] at its kept port held by
// another program takes it as the port taken (TestDashboardKeepsItsPort):
// another port, and a new token, since that program gets what a tab at
// localhost sends there.
func TestDashboardKeptPortHeldOnIPv6ChangesTheToken(t *testing.T) {
	nt := nodetest.Start(t, 1)
	first, tok := uiBase(t, nt, 0)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(first, "http://"))
	if squatV6(t, port) != nil {
		t.Fatalf("the node does not hold [::1]:%s, its dashboard's port", port)
	}
	nt.Crash(0)
	hold := squatV6(t, port)
	if hold == nil {
		t.Fatalf("[::1]:%s is still held after the node stopped", port)
	}
	defer hold.Close()
	nt.Restart(0)
	moved, newTok := uiBase(t, nt, 0)
	if moved == first {
		t.Fatalf("the dashboard is at %s, whose port another program holds on [::1]", moved)
	}
	if newTok == tok || newTok == "" {
		t.Fatal("the dashboard kept its token though a tab at localhost of its saved address now reaches another program")
	}
}
