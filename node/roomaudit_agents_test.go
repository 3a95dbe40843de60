package node_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestCoMemberInvitesOfThisNodesAgentsAuditedWithinBounds: the room auditor
// used to record every decision "about this node" without limit, and an
// invite of one of this node's agents by name counts as one, so a co-member
// inviting this node's agents under name after name wrote a signed, fsynced
// line into this node's audit log for each, without bound. Such invites are
// now held to RoomAudits a minute per deciding node like decisions about
// third nodes; the removal of this node that follows is still recorded and
// says how many were left out (unlogged_before).
func TestCoMemberInvitesOfThisNodesAgentsAuditedWithinBounds(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nt.WaitConnected(0, 1)
	id, err := nt.Node(1).Rooms().CreateRoom(ctx, "work", "", "mallory")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Node(1).Rooms().Invite(ctx, id, nt.ID(0), "mallory"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { _, err := nt.Node(0).Rooms().Get(id); return err == nil }, "node 0 to join")
	const n = 100
	for i := range n {
		if _, err := nt.Node(1).Rooms().InviteAgent(ctx, id, nt.ID(0), identity.AgentName(fmt.Sprintf("a%d", i)), "mallory"); err != nil {
			t.Fatalf("invite %d: %v", i, err)
		}
	}
	if _, err := nt.Node(1).Rooms().Remove(ctx, id, nt.ID(0), "mallory"); err != nil {
		t.Fatal(err)
	}
	by := "peer:" + nt.ID(1).String()
	var invites int
	var removal *audit.Listed
	read := func() bool {
		es, err := audit.List(nt.Home(0), time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		invites, removal = 0, nil
		for i, e := range es {
			switch {
			case e.Actor != by:
			case e.Action == audit.RoomInvite && strings.HasPrefix(e.Detail["agent"], "a"):
				invites++
			case e.Action == audit.RoomRemove && e.Detail["peer"] == nt.ID(0).String():
				removal = &es[i]
			}
		}
		return removal != nil
	}
	nt.WaitFor(60*time.Second, read, "node 0 to record its removal")
	t.Logf("%d invites of node 0's agents: %d lines, the removal says %q left out", n, invites, removal.Detail["unlogged_before"])
	// A few tokens may come back while the test runs: one in 3 s.
	if invites > node.RoomAudits+20 {
		t.Fatalf("a co-member's %d invites of this node's agents wrote %d lines into its audit log (its decisions are held to %d a minute)", n, invites, node.RoomAudits)
	}
	if want := strconv.Itoa(n - invites); removal.Detail["unlogged_before"] != want {
		t.Fatalf("the removal's line says %q invites were left out, want %s", removal.Detail["unlogged_before"], want)
	}
}
