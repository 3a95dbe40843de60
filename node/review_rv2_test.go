package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestReviewMemberWritesTheAuditLogWithoutBound: the room auditor records
// every decision "about this node" with no limit (RoomAudits bounds only
// decisions about third nodes), and an invite of one of this node's agents
// by name counts as one. So a co-member that invites this node's agents
// under name after name, one small event each, writes a signed, twice
// fsynced line into this node's audit log for every one, without bound:
// the log, which the dashboard reads whole every second
// (TestReviewListOfTheLastEntriesReadsTheWholeLog in internal/audit),
// grows at the member's pace.
func TestReviewMemberWritesTheAuditLogWithoutBound(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := nt.Node(1).Rooms().CreateRoom(ctx, "work", "", "mallory")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(1).Rooms().Invite(ctx, id, nt.ID(0), "mallory"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { _, err := nt.Node(0).Rooms().Get(id); return err == nil }, "node 0 to join")
	const n = 200
	for i := range n {
		if _, err := nt.Node(1).Rooms().InviteAgent(ctx, id, nt.ID(0), identity.AgentName(fmt.Sprintf("a%d", i)), "mallory"); err != nil {
			t.Fatalf("invite %d: %v", i, err)
		}
	}
	count := func() int {
		es, err := audit.List(nt.Home(0), time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, e := range es {
			if e.Actor == "peer:"+nt.ID(1).String() && e.Action == audit.RoomInvite && strings.HasPrefix(e.Detail["agent"], "a") {
				k++
			}
		}
		return k
	}
	// Wait for node 0 to hold the last invite, then for its auditor.
	nt.WaitFor(30*time.Second, func() bool {
		info, err := nt.Node(0).Rooms().Get(id)
		return err == nil && info.Events >= n
	}, "node 0 to store the invites")
	nodetest.Poll(5*time.Second, func() bool { return count() >= n })
	if k := count(); k > 2*node.RoomAudits {
		t.Fatalf("a co-member's %d invites of this node's agents wrote %d lines into its audit log (third-party decisions are held to %d a minute)", n, k, node.RoomAudits)
	}
}
