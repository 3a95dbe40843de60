package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPThreadAgentsInvitationDoesNotListItself: the invitation's manual
// lists the room's other members ("In it: …"), leaving out the agent it
// is for. For a thread's agent (thread_id) the MCP server names the agent
// by its bare name, not its address, so the agent is listed among the
// others, as if someone else of its name were in the room. Before, it
// was listed; now the server passes the thread agent's address as "you".
func TestMCPThreadAgentsInvitationDoesNotListItself(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a := connect(t, nt, 0, "a")
	b := connect(t, nt, 0, "b")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	reg, _ := call(t, b, "parley_register", map[string]any{"name": "worker", "thread_id": "t1"})
	me := reg["address"].(string)
	call(t, a, "parley_room_open", map[string]any{"name": "r", "members": []string{"worker"}})
	var inv string
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		out, _ := call(t, b, "parley_who", map[string]any{"thread_id": "t1"})
		for _, p := range out["pending"].([]any) {
			if it := p.(map[string]any); it["kind"] == "invitation" {
				inv = it["text"].(string)
			}
		}
		return inv != ""
	}, "the thread's agent to be invited")
	for l := range strings.Lines(inv) {
		if strings.HasPrefix(l, "In it:") && strings.Contains(l, me) {
			t.Fatalf("the invitation lists its own agent (%s) among the room's others:\n%s", me, inv)
		}
	}
}
