package localapi_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A stop waiter's next wait names its previous answer's seq on the wire
// (&after=): a busy call between the two ends it at once. A first wait
// (no after) is not ended by an older busy call; an after that is no
// number is refused.
func TestWakeWaitAfterOnTheWire(t *testing.T) {
	nt := nodetest.Start(t, 1)
	socket := node.SocketPath(nt.Home(0))
	c := localapi.NewClient(socket)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s1", Name: "bot"}); err != nil {
		t.Fatal(err)
	}
	if err := c.WakeBusy(ctx, "bot", "s1"); err != nil {
		t.Fatal(err)
	}
	req := localapi.WakeWaitRequest{Kind: localapi.WakeStop, Session: "s1", Seconds: 0.1}
	w, err := c.WakeWait(ctx, "bot", req)
	if err != nil || w.Superseded || w.Seq == 0 {
		t.Fatalf("a first wait after a busy call: %+v, %v", w, err)
	}
	if err := c.WakeBusy(ctx, "bot", "s1"); err != nil {
		t.Fatal(err)
	}
	req.Seconds, req.After = 30, w.Seq
	start := time.Now()
	if w, err := c.WakeWait(ctx, "bot", req); err != nil || !w.Superseded || time.Since(start) > 20*time.Second {
		t.Fatalf("a wait again after a busy call: %+v, %v after %s", w, err, time.Since(start))
	}

	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	resp, err := hc.Get("http://parley/v1/agents/bot/wake/wait?kind=stop&session=s1&seconds=0&after=soon")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("after=soon: %s", resp.Status)
	}
}
