package agents_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// rawCall sends a request without a body to the local API, to check what
// goes over the wire.
func rawCall(ctx context.Context, socket, method, path string) (*http.Response, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	req, err := http.NewRequestWithContext(ctx, method, "http://parley"+path, nil)
	if err != nil {
		return nil, err
	}
	return hc.Do(req)
}

func apiStatus(err error) (int, string) {
	var e *localapi.Error
	if errors.As(err, &e) {
		return e.Status, e.Code
	}
	return 0, ""
}

// The local API contract the MCP server and the CLI are written against.
func TestLocalAPIContract(t *testing.T) {
	nt := nodetest.Start(t, 1)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx := context.Background()

	info, err := c.RegisterAgent(ctx, localapi.RegisterAgentRequest{
		Name: "coder", Role: "writes code", WorkingOn: "issue 12", Capabilities: []string{"go"},
		Client: "claude-code", Session: "sess-1", TTLSeconds: 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "coder" || info.State != "idle" || info.Session != "sess-1" || info.WorkingOn != "issue 12" ||
		info.Expires.Sub(info.LastSeen) != 30*time.Second {
		t.Fatalf("register: %+v", info)
	}
	_, err = c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "coder", Session: "sess-2"})
	if st, code := apiStatus(err); st != http.StatusConflict || code != "name_taken" {
		t.Fatalf("another session: %v (%d %s)", err, st, code)
	}
	// The same session registering again replaces the registration (the
	// state is kept).
	if info, err = c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "coder", Session: "sess-1", Role: "reviews code"}); err != nil ||
		info.Role != "reviews code" || len(info.Capabilities) != 0 || info.Expires.Sub(info.LastSeen) != 60*time.Second {
		t.Fatalf("update by the same session: %+v %v", info, err)
	}
	if _, err = c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "coder", Session: "sess-1", Role: "reviews code", Capabilities: []string{"go"}}); err != nil {
		t.Fatal(err)
	}
	busy, w := "busy", "issue 13"
	if info, err = c.Heartbeat(ctx, "coder", localapi.HeartbeatRequest{State: &busy, WorkingOn: &w}); err != nil ||
		info.State != "busy" || info.WorkingOn != "issue 13" {
		t.Fatalf("heartbeat: %+v %v", info, err)
	}
	// A heartbeat with no body at all.
	resp, err := rawCall(ctx, c.Socket(), "POST", "/v1/agents/coder/heartbeat")
	if err != nil {
		t.Fatalf("empty heartbeat: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), `"state":"busy"`) {
		t.Fatalf("empty heartbeat answer: %s", raw)
	}
	bad := "sleeping"
	if _, err := c.Heartbeat(ctx, "coder", localapi.HeartbeatRequest{State: &bad}); func() int { s, _ := apiStatus(err); return s }() != 400 {
		t.Fatalf("bad state: %v", err)
	}
	if _, err := c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "Bad Name"}); func() int { s, _ := apiStatus(err); return s }() != 400 {
		t.Fatalf("bad name: %v", err)
	}

	list, err := c.Agents(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "coder" || len(list[0].Capabilities) != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	who, err := c.Who(ctx)
	if err != nil || len(who) != 1 || !who[0].Local || who[0].WorkingOn != "issue 13" || who[0].PeerID != nt.ID(0).String() ||
		who[0].Handle != "node0" || who[0].LastSeen.IsZero() {
		t.Fatalf("who: %+v %v", who, err)
	}
	for _, q := range []string{"nothing-here", "cap:zzz"} {
		found, err := c.Find(ctx, q)
		if err != nil || found.Cards == nil || len(found.Cards) != 0 || found.LeftOutPerNode+found.LeftOutInAll != 0 {
			t.Fatalf("find %q: %+v %v", q, found, err)
		}
	}
	for _, q := range []string{"", "cap:"} {
		if _, err := c.Find(ctx, q); func() int { s, _ := apiStatus(err); return s }() != 400 {
			t.Fatalf("find %q, which can match nothing: %v, want 400", q, err)
		}
	}
	resp, err = rawCall(ctx, c.Socket(), "GET", "/v1/find?q=nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(raw)) != `{"cards":[],"left_out_per_node":0,"left_out_in_all":0}` {
		t.Fatalf("find of nothing: %s, want no cards", raw)
	}
	// The node's own agent is found (its own provider records). The card is
	// published by a background job, so wait for it.
	var found []localapi.CardView
	if !nodetest.Poll(30*time.Second, func() bool {
		var res localapi.FindResult
		res, err = c.Find(ctx, "cap:go")
		found = res.Cards
		return err == nil && len(found) == 1 && found[0].Agent == "coder"
	}) {
		t.Fatalf("find own agent: %+v %v", found, err)
	}

	if err := c.UnregisterAgent(ctx, "coder"); err != nil {
		t.Fatal(err)
	}
	// Twice, or a name never registered: the user is told.
	for _, name := range []string{"coder", "nobody"} {
		err := c.UnregisterAgent(ctx, name)
		if st, code := apiStatus(err); st != http.StatusNotFound || code != "unknown_agent" || !strings.Contains(err.Error(), "not registered") {
			t.Fatalf("unregister of %s, not registered: %v (%d %s)", name, err, st, code)
		}
	}
	_, err = c.Heartbeat(ctx, "coder", localapi.HeartbeatRequest{})
	if st, code := apiStatus(err); st != http.StatusNotFound || code != "unknown_agent" {
		t.Fatalf("heartbeat after unregister: %v (%d %s)", err, st, code)
	}
	if list, err := c.Agents(ctx); err != nil || len(list) != 0 {
		t.Fatalf("list after unregister: %+v %v", list, err)
	}
}

func TestNoGoroutineLeftAfterClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/ipfs/go-log/v2/writer.(*MirrorWriter).logRoutine"),
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
	nt := startNet(t, 3)
	nt.Befriend(t, 1, 2)
	ctx := context.Background()
	if _, err := svc(nt, 2).Register(ctx, agents.RegisterRequest{Name: "coder", Capabilities: []string{"go"}}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return hasCard(find(t, nt, 1, "cap:go"), nt.ID(2), "coder") }, "find")
	nt.WaitFor(10*time.Second, func() bool { _, ok := whoHas(nt, 1, nt.ID(2), "coder"); return ok }, "presence")
	nt.Close()
}
