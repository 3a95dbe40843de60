package node_test

import (
	"net"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// With ui_port set in the config, a start that finds the port held by
// another program serves no dashboard; meanwhile that program gets what
// the browser sends there (a tab reloaded or restored loads its page at
// the dashboard's origin, which reads the token from the tab's
// sessionStorage). Once the node has the port again, that token must be
// worth nothing, as when the port is the one the node chose
// (TestDashboardKeepsItsPort): before, the node changed its token only
// then, and kept it across a start whose configured port another program
// held.
func TestDashboardFixedPortTakenChangesTheToken(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().(*net.TCPAddr)
	probe.Close()
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(i int, c *node.Config) { c.UIPort = addr.Port }))
	first, tok := uiBase(t, nt, 0)
	if !strings.HasSuffix(first, addr.String()) {
		t.Fatalf("the dashboard is at %s, not at the configured %s", first, addr)
	}
	nt.Crash(0)
	hold, err := net.Listen("tcp", addr.String())
	if err != nil {
		t.Fatalf("hold the dashboard's port: %v", err)
	}
	n := nt.Restart(0)
	if n.UIError() == "" {
		hold.Close()
		t.Fatalf("the node says it serves its dashboard on %s, which another program holds", addr)
	}
	hold.Close()
	nt.Crash(0)
	nt.Restart(0)
	again, newTok := uiBase(t, nt, 0)
	if again != first {
		t.Fatalf("the dashboard is at %s, want the configured %s", again, first)
	}
	if newTok == tok {
		t.Fatal("the dashboard kept its token across a start whose configured port another program held: what that program got from the browser still opens the dashboard")
	}
	if code, _ := uiDo(t, "GET", again+"/ui/state", tok, nil, ""); code != 401 {
		t.Fatalf("the old token is answered %d", code)
	}
}
