package node_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// squatter is another program that takes the dashboard's port while the
// node is down: it records what it is sent and answers as a dashboard
// would, without the token.
type squatter struct {
	mu   sync.Mutex
	seen []string // method, URL and headers of each request
	srv  *http.Server
}

func (q *squatter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q.mu.Lock()
	q.seen = append(q.seen, fmt.Sprintf("%s %s %v", r.Method, r.URL, r.Header))
	q.mu.Unlock()
	switch r.URL.Path {
	case "/ui/proof": // a guess: it does not know the token
		var b [32]byte
		rand.Read(b[:])
		fmt.Fprint(w, hex.EncodeToString(b[:]))
	case "/ui/stream":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: hello\ndata: {\"node\":\"x\",\"handle\":\"squatter\",\"max_events\":200}\n\n")
		fmt.Fprint(w, "event: rooms\ndata: [{\"room_id\":\"squatted\",\"name\":\"squatted\"}]\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	default:
		fmt.Fprint(w, "{}")
	}
}

func (q *squatter) requests() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.seen...)
}

// An open dashboard tab whose node goes down, and whose port another
// program takes meanwhile, sends that program neither its token (on its
// retries nor on a post) nor shows what it sends, and says why; once the
// node is back on its port, the tab is live again.
func TestDashboardSendsTheTokenOnlyToItsNode(t *testing.T) {
	t.Parallel() // waits on the page's retries; sets no package knob
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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
	tok := uiToken(t, nt.Home(0))
	b := browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID))

	nt.Crash(0)
	var ln net.Listener
	nt.WaitFor(30*time.Second, func() bool {
		ln, err = net.Listen("tcp", u.Host)
		return err == nil
	}, "the dashboard's port to be free")
	q := &squatter{}
	q.srv = &http.Server{Handler: q, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- q.srv.Serve(ln) }()
	// Whatever the page sends the squatter, it sends no token.
	sentNothing := func() {
		t.Helper()
		for _, r := range q.requests() {
			if strings.Contains(r, tok) || !strings.HasPrefix(r, "GET /ui/proof?") {
				t.Fatalf("the squatter got more than a request for a proof: %s", r)
			}
		}
	}
	nt.WaitFor(30*time.Second, func() bool { return len(q.requests()) >= 1 }, "the page to try the squatter")
	sentNothing()
	nt.WaitFor(30*time.Second, func() bool { return len(q.requests()) >= 2 }, "the page to try again")
	sentNothing()
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent.includes("not this node's dashboard")`, "the page to say the port's program is not its node")
	// The human posts meanwhile.
	run(t, b, "post while the node is down",
		chromedp.SendKeys(chromedp.CSS("#text"), "while squatted"), chromedp.Click(chromedp.CSS("#send")))
	waitJS(t, b, 30*time.Second, `document.getElementById("error").textContent.includes("not this node's dashboard")`, "the post refused, saying why")
	sentNothing()
	if eval[bool](t, b, `window.parley.rooms.some(r => r.room_id === "squatted")`) {
		t.Fatal("the page shows the squatter's rooms")
	}

	if err := q.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatal(err)
	}
	nt.Restart(0)
	if again, err := c0.UI(ctx); err != nil || !strings.HasPrefix(again.URL, "http://"+u.Host+"/?c=") || uiToken(t, nt.Home(0)) != tok {
		t.Fatalf("after the restart the dashboard is at %q (%v), was at %q; or its token changed", again.URL, err, u.Host)
	}
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the page live again once its node is back")
	run(t, b, "post once the node is back", chromedp.Click(chromedp.CSS("#send")))
	nt.WaitFor(30*time.Second, func() bool {
		es, err := c0.Log(ctx, room.RoomID, 0, "")
		if err != nil {
			return false
		}
		for _, e := range es {
			if e.Text == "while squatted" {
				return true
			}
		}
		return false
	}, "the post in the room once the node is back")
}
