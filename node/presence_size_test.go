package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Before, nothing checked the sum of a node's agents' states against
// one presence message's 64 KiB (64 live agents, each with up to 32
// capabilities of 64 bytes and 500 characters of working_on): once past
// it, sealPresence failed, the node sent presence to no contact at all,
// and after three heartbeats every contact showed all of its agents as
// offline; now the node clips what each agent works on and its
// capabilities until the message fits, keeping every agent's name and
// state. Here 30 agents with 32 capabilities of 64 bytes and 500
// characters of work each: an agent registered after them is still seen
// by the contact.
func TestPresenceOfManyAgentsIsClippedToReachContacts(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	nt.Befriend(t, 0, 1)
	ctx := context.Background()
	sees := func(agent string) bool {
		for _, e := range nt.Node(1).Agents().Who(ctx) {
			if e.PeerID == nt.ID(0).String() && e.Agent == agent {
				return true
			}
		}
		return false
	}
	reg := func(name string, caps []string, work string) {
		t.Helper()
		if _, err := nt.Node(0).Agents().Register(ctx, agents.RegisterRequest{
			Name: name, Capabilities: caps, WorkingOn: work, TTLSeconds: 600,
		}); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
	reg("first", nil, "")
	nt.WaitFor(20*time.Second, func() bool { return sees("first") }, "the contact to see the first agent")

	work := strings.Repeat("w", 500)
	for i := range 30 {
		var caps []string
		for j := range 32 {
			caps = append(caps, fmt.Sprintf("cap-%02d-%s", j, strings.Repeat("c", 57)))
		}
		reg(fmt.Sprintf("worker-%02d", i), caps, work)
	}
	reg("last", nil, "")
	if !nodetest.Poll(15*time.Second, func() bool { return sees("last") }) {
		t.Fatalf("31 agents registered on node 0 (30 with 32 capabilities and 500 characters of work): its contact never sees the last one; the presence message is over %d bytes and is not sent at all", 64<<10)
	}
	// Clipped, not dropped: what worker-00 works on is shown, shorter.
	for _, e := range nt.Node(1).Agents().Who(ctx) {
		if e.PeerID == nt.ID(0).String() && e.Agent == "worker-00" {
			if e.WorkingOn == "" || len(e.WorkingOn) >= len(work) || !strings.HasPrefix(work, e.WorkingOn) {
				t.Fatalf("worker-00 works on %d characters at its contact; want a clipped prefix of its %d", len(e.WorkingOn), len(work))
			}
			return
		}
	}
	t.Fatal("the contact does not see worker-00")
}
