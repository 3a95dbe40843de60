package agents_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestSessions: a session keeps its agent's name and card across
// connections; a new session with a taken fallback name gets another; a
// rename drops the old registration.
func TestSessions(t *testing.T) {
	nt := nodetest.Start(t, 1)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx := context.Background()
	role, caps := "reviewer", []string{"go", "sql"}
	a, err := c.Session(ctx, localapi.SessionRequest{Session: "s1", Fallback: "claude-code-api", Client: "claude-code", Role: &role, Capabilities: &caps})
	if err != nil || a.Name != "claude-code-api" || a.Role != "reviewer" || a.Address != "claude-code-api@"+nt.ID(0).String() {
		t.Fatalf("first bind: %+v %v", a, err)
	}
	b, err := c.Session(ctx, localapi.SessionRequest{Session: "s2", Fallback: "claude-code-api"})
	if err != nil || b.Name != "claude-code-api-2" {
		t.Fatalf("a second session with the same fallback: %+v %v", b, err)
	}
	// The same session again, with nothing: its name and card come back,
	// even after its registration is gone.
	if err := c.UnregisterAgent(ctx, "claude-code-api"); err != nil {
		t.Fatal(err)
	}
	again, err := c.Session(ctx, localapi.SessionRequest{Session: "s1", Fallback: "other"})
	if err != nil || again.Name != "claude-code-api" || again.Role != "reviewer" || !slices.Equal(again.Capabilities, caps) || again.Client != "claude-code" {
		t.Fatalf("bind again: %+v %v", again, err)
	}
	// Rename: the old name is no longer registered; the new one sticks.
	r, err := c.Session(ctx, localapi.SessionRequest{Session: "s1", Name: "Reviewer-One"})
	if err != nil || r.Name != "reviewer-one" || r.Role != "reviewer" {
		t.Fatalf("rename: %+v %v", r, err)
	}
	list, _ := c.Agents(ctx)
	for _, l := range list {
		if l.Name == "claude-code-api" {
			t.Fatalf("the old name is still registered: %+v", list)
		}
	}
	if r, _ := c.Session(ctx, localapi.SessionRequest{Session: "s1"}); r.Name != "reviewer-one" {
		t.Fatalf("after the rename: %+v", r)
	}
	// A name another live session holds is refused; bad input too.
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s1", Name: "claude-code-api-2"}); !localapi.IsCode(err, localapi.CodeNameTaken) {
		t.Fatalf("taking a live session's name: %v", err)
	}
	for _, req := range []localapi.SessionRequest{{Session: "", Fallback: "x"}, {Session: "s3", Fallback: "Not A Name!"}, {Session: "s\x01", Fallback: "x"}} {
		if _, err := c.Session(ctx, req); !localapi.IsCode(err, localapi.CodeBadRequest) {
			t.Fatalf("bad session %+v: %v", req, err)
		}
	}
}

// TestReRegisterKeepsClientPID: registering a session's agent again
// through the local API (as `parley agent register --session` does, which
// carries no process) keeps the client's process its MCP server told, so
// ByProcess still names the agent; a bind that names another process
// replaces it; a registration made afresh has none.
func TestReRegisterKeepsClientPID(t *testing.T) {
	nt := nodetest.Start(t, 1)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx := context.Background()
	pid := os.Getpid() // this test's process stands for the client program
	byProcess := func(pids ...int) localapi.ProcessAgents {
		t.Helper()
		r, err := c.AgentsByProcess(ctx, pids)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, err := c.Session(ctx, localapi.SessionRequest{Session: "mcp-1", Fallback: "coder", Client: "claude-code", ClientPID: pid})
	if err != nil || a.Name != "coder" || a.ClientPID != pid {
		t.Fatalf("bind: %+v %v", a, err)
	}
	r, err := c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "coder", Session: "mcp-1", Client: "claude-code", Role: "code review"})
	if err != nil || r.Role != "code review" || r.ClientPID != pid {
		t.Fatalf("register again in the session: %+v %v (want client_pid %d)", r, err, pid)
	}
	if got := byProcess(pid); got.PID != pid || !slices.Equal(got.Agents, []string{"coder"}) {
		t.Fatalf("by process after the register: %+v", got)
	}
	list, err := c.Agents(ctx)
	if err != nil || len(list) != 1 || list[0].ClientPID != pid || list[0].Role != "code review" {
		t.Fatalf("agent list: %+v %v", list, err)
	}

	// A bind that names another process (the client restarted) takes it.
	other := os.Getppid()
	if b, err := c.Session(ctx, localapi.SessionRequest{Session: "mcp-1", ClientPID: other}); err != nil || b.ClientPID != other {
		t.Fatalf("bind with another process: %+v %v", b, err)
	}
	if got := byProcess(pid); got.PID != 0 || len(got.Agents) != 0 {
		t.Fatalf("the old process still names the agent: %+v", got)
	}

	// Once unregistered, a new registration starts with no process.
	if err := c.UnregisterAgent(ctx, "coder"); err != nil {
		t.Fatal(err)
	}
	if r, err := c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "coder", Session: "mcp-1"}); err != nil || r.ClientPID != 0 {
		t.Fatalf("a fresh registration: %+v %v", r, err)
	}
	if got := byProcess(pid, other); got.PID != 0 {
		t.Fatalf("by process after a fresh registration: %+v", got)
	}
}

// TestHumanIsNoAgentsName: "human" is the node's user (their posts, what
// is owed to them, the rules moderation will not put on them), so no agent
// takes it: registering it, in any case, and binding a session to it are
// refused as bad input naming the reason; a session whose fallback is
// "human" (a client called so, or none, in a folder called so) gets
// "human-2".
func TestHumanIsNoAgentsName(t *testing.T) {
	nt := nodetest.Start(t, 1)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx := context.Background()
	for _, name := range []string{"human", "Human", " HUMAN "} {
		_, err := c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: name})
		if !localapi.IsCode(err, localapi.CodeBadRequest) || !strings.Contains(err.Error(), `"human" is you, the user of this node`) {
			t.Fatalf("register %q: %v, want a bad request saying it is the user's name", name, err)
		}
	}
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s1", Name: "human", Fallback: "x"}); !localapi.IsCode(err, localapi.CodeBadRequest) {
		t.Fatalf("a session named human: %v", err)
	}
	a, err := c.Session(ctx, localapi.SessionRequest{Session: "s2", Fallback: "human"})
	if err != nil || a.Name != "human-2" {
		t.Fatalf("a session whose fallback is human: %+v %v", a, err)
	}
	list, err := c.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if l.Name == "human" {
			t.Fatalf("human is registered as an agent: %+v", list)
		}
	}
}

// A rename and a bind of the same session at once (a `parley mcp` taking a
// new name while its pane's terminal route binds the session again, having
// found the old name unregistered) leave the session with one name,
// registered: before, the bind could read the profile between the rename's
// unregister of the old name and its save of the new one, and register the
// old name again beside the new (the route then kept its old name for good).
func TestRenameAndRebindOfASessionAtOnce(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ag := nt.Node(0).Agents()
	ctx := context.Background()
	if _, err := ag.Session(ctx, agents.SessionRequest{Session: "s1", Name: "name-0"}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 300; i++ {
		name := "name-" + strconv.Itoa(i)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = ag.Session(ctx, agents.SessionRequest{Session: "s1"})
		}()
		if _, err := ag.Session(ctx, agents.SessionRequest{Session: "s1", Name: name}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		var held []string
		for _, a := range ag.List() {
			if a.Session == "s1" {
				held = append(held, a.Name)
			}
		}
		if got, _ := ag.SessionName("s1"); got != name || !slices.Equal(held, []string{name}) {
			t.Fatalf("round %d: the session is bound to %q and holds %v; want %s alone", i, got, held, name)
		}
	}
}
