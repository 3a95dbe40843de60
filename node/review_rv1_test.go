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

// The node an audit record concerns records other nodes' decisions about it
// (peer:ID room.invite, room.remove). When a room's creator invites an agent
// of node 1 (`room invite ROOM coder@PEER`), node 1 records it; when the
// creator takes that agent out again (`room remove ROOM coder@PEER`), node 1
// records nothing: an agent's removal is a leave event naming the agent
// (To) with no Target, which the auditor skips (node/roomaudit.go, event:
// `e.Target == ""`).
func TestAnAgentsRemovalIsAuditedOnItsNode(t *testing.T) {
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
