package mcp_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// serveUntil serves a session of node i as connect does, and returns a
// function that ends that server (its client gone) and waits for it.
func serveUntil(tb testing.TB, nt *nodetest.Net, i int, session string) (*sdk.ClientSession, func()) {
	tb.Helper()
	return serve(tb, nt, i, mcp.Config{Session: session, ClientName: "bench", Project: "/p"})
}

// serve serves Parley's MCP tools by cfg (its Client: node i's) and
// returns a go-sdk client session on it (in-memory transport) and a
// function that ends the server (its client gone) and waits for it; the
// test's end does it too.
func serve(tb testing.TB, nt *nodetest.Net, i int, cfg mcp.Config) (*sdk.ClientSession, func()) {
	tb.Helper()
	c := localapi.NewClient(node.SocketPath(nt.Home(i)))
	cfg.Client = c
	srv := mcp.New(cfg)
	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		c.Close()
		tb.Fatal(err)
	}
	var once sync.Once
	end := func() {
		once.Do(func() {
			cs.Close()
			cancel()
			<-done
			c.Close()
		})
	}
	tb.Cleanup(end)
	return cs, end
}

// TestOldConnectionEndKeepsTheReconnectedAgent: before, when a client
// reconnected (a new server with the same session key while the old one
// finished, waiting up to EndGrace for its calls under way), the new
// server bound the session's agent and the old one, at its end,
// unregistered that name, the live agent of the new connection with it:
// the agent was gone from the node (asks to it refused, no wake-ups)
// until the new server's next heartbeat, 20 s later; now each server binds
// with a connection token of its own and the node unregisters at a
// connection's end only a registration still that connection's.
func TestOldConnectionEndKeepsTheReconnectedAgent(t *testing.T) {
	nt := nodetest.Start(t, 1)
	old, endOld := serveUntil(t, nt, 0, "same-key")
	call(t, old, "parley_register", map[string]any{"name": "alpha"})
	fresh, _ := serveUntil(t, nt, 0, "same-key")
	if out, _ := call(t, fresh, "parley_register", nil); out["agent"] != "alpha" {
		t.Fatalf("the reconnected session is %v, not alpha", out["agent"])
	}
	endOld()
	registered := slices.ContainsFunc(nt.Node(0).Agents().List(), func(i agents.Info) bool { return i.Name == "alpha" })
	if !registered {
		t.Fatal("the old connection's end unregistered alpha, the live agent of the reconnected session")
	}
}

// TestTokenlessRenewalKeepsTheReconnectedAgent: before, a registration
// made again without a connection token (a hook, the Codex adapter,
// parley run or `parley agent register --session`) cleared the token the
// reconnected server had bound with, so the old server's end, coming
// after it, unregistered the session's live agent; now such a renewal
// keeps the token of the connection that holds the name, and only that
// connection's end unregisters it.
func TestTokenlessRenewalKeepsTheReconnectedAgent(t *testing.T) {
	nt := nodetest.Start(t, 1)
	old, endOld := serveUntil(t, nt, 0, "same-key")
	call(t, old, "parley_register", map[string]any{"name": "alpha"})
	fresh, endFresh := serveUntil(t, nt, 0, "same-key")
	if out, _ := call(t, fresh, "parley_register", nil); out["agent"] != "alpha" {
		t.Fatalf("the reconnected session is %v, not alpha", out["agent"])
	}
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	t.Cleanup(func() { c.Close() })
	if _, err := c.RegisterAgent(context.Background(), localapi.RegisterAgentRequest{Name: "alpha", Session: "same-key", Client: "hook"}); err != nil {
		t.Fatal(err)
	}
	registered := func() bool {
		return slices.ContainsFunc(nt.Node(0).Agents().List(), func(i agents.Info) bool { return i.Name == "alpha" })
	}
	endOld()
	if !registered() {
		t.Fatal("the old connection's end unregistered alpha after a renewal made without a connection")
	}
	endFresh()
	if registered() {
		t.Fatal("the end of the connection that holds alpha left it registered")
	}
}
