package node_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Regression: a node recorded the invite of its agent by another node, but
// not that agent's removal (`room remove ROOM coder@PEER` by the room's
// creator): the removal is a leave event naming the agent (To), not a node
// (Target), and the room auditor skipped it. Node 1 now records
// peer:ID room.remove ROOM.
func TestAgentRemovalByAnotherNodeIsAuditedOnItsNode(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) { c.SyncInterval = time.Second }))
	nt.ConnectAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	needContact(t, nt, 0, 1)
	c0, c1 := localapi.NewClient(node.SocketPath(nt.Home(0))), localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer c0.Close()
	defer c1.Close()
	if _, err := c1.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "coder"}); err != nil {
		t.Fatal(err)
	}
	coder := "coder@" + nt.ID(1).String()
	res, err := c0.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "design", Members: []string{coder}})
	if err != nil || len(res.Invited) != 1 {
		t.Fatalf("open: %+v %v", res, err)
	}
	by := "peer:" + nt.ID(0).String()
	nt.WaitFor(30*time.Second, func() bool {
		return slices.Contains(auditActions(t, nt, 1), by+" room.invite "+res.RoomID)
	}, "node 1 to record that node 0 invited its agent")
	if _, err := c0.Remove(ctx, res.RoomID, localapi.RemoveRequest{PeerID: coder}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		in, err := c1.Room(ctx, res.RoomID)
		return err == nil && !slices.Contains(in.Agents, coder)
	}, "node 1 to see its agent out of the room")
	// The removal reached node 1; its auditor read it with the batch.
	got := auditActions(t, nt, 1)
	nt.WaitFor(5*time.Second, func() bool {
		got = auditActions(t, nt, 1)
		return slices.Contains(got, by+" room.remove "+res.RoomID)
	}, "node 1 to record that node 0 removed its agent:\n%s", strings.Join(got, "\n"))
}
