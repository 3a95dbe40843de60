package mcp_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A thread with no call for Config.ThreadIdle is let go: its agent is no
// longer renewed but unregistered, and its place is free for a new
// thread_id; its next call binds it again, under the same name.
func TestIdleThreadIsLetGo(t *testing.T) {
	nt := nodetest.Start(t, 1)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	t.Cleanup(func() { c.Close() })
	srv := mcp.New(mcp.Config{Client: c, Session: "long", ClientName: "bench", Project: "/p",
		HeartbeatEvery: 20 * time.Millisecond, ThreadIdle: 100 * time.Millisecond})
	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cancel(); <-done })

	registered := func(name string) bool {
		actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer acancel()
		as, err := c.Agents(actx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(as, func(a localapi.AgentInfo) bool { return a.Name == name })
	}
	var names []string
	for i := range mcp.MaxThreads {
		o, _ := call(t, cs, "parley_register", map[string]any{"thread_id": fmt.Sprintf("t%d", i)})
		names = append(names, o["agent"].(string))
	}
	nt.WaitFor(10*time.Second, func() bool { return !registered(names[0]) && !registered(names[mcp.MaxThreads-1]) },
		"the idle threads' agents to be let go")
	if !registered(srv.Agent()) {
		t.Fatalf("the session's own agent %s went with its idle threads", srv.Agent())
	}
	if _, text, isErr := try(t, cs, "parley_who", map[string]any{"thread_id": "new"}); isErr {
		t.Fatalf("a new thread is refused after the idle ones were let go: %s", text)
	}
	if o, _ := call(t, cs, "parley_register", map[string]any{"thread_id": "t0"}); o["agent"] != names[0] {
		t.Fatalf("thread t0 comes back as %v, not %s", o["agent"], names[0])
	}
}
