package rooms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/rooms"
)

// agentIn reports node i's record of agent addr: in, and removed.
func (c *crossing) agentIn(i int, addr string) (in, removed bool) {
	c.t.Helper()
	a, ok, err := c.mgr(i).AgentState(c.id, addr)
	if err != nil || !ok {
		c.t.Fatalf("node %d: no record of %s (%v)", i, addr, err)
	}
	return a.In, a.Removed()
}

// A removal of an agent by the room's creator and the agent's own posts made
// across it: both nodes hold the agent out, whichever came first, and its
// posts are kept; an invite naming it after the removal brings it back on
// both, and its node stays a member throughout.
func TestAgentRemovalCrossingItsPosts(t *testing.T) {
	c := newCrossing(t, time.Now())
	x := string(identity.HumanAgent) + "@" + c.xid.String()
	// The creator removes x's agent having seen x's first post; x posts
	// twice without knowing of the removal: its second post is deeper than
	// the removal, so later in display order.
	removal, rid := c.postTo(c.ck, rooms.KindLeave, nil, x, c.x1)
	m1, m1id := c.post(c.xk, rooms.KindMessage, []byte("across one"), c.x1)
	m2, m2id := c.post(c.xk, rooms.KindMessage, []byte("across two"), m1id)
	c.give(0, removal, m1, m2)
	c.give(1, m1, m2, removal)
	for i := range c.nets {
		if in, removed := c.agentIn(i, x); in || !removed {
			t.Fatalf("node %d: x's agent in %v, removed %v; want out by its removal", i, in, removed)
		}
	}
	if !c.exchange() {
		t.Fatal("the nodes hold different events")
	}
	c.checkMember(true) // the node stays; only its agent went
	// An invite that names the agent, made before the removal was known
	// (display order before it), does not bring it back; one after does.
	early, _ := c.postTo(c.ck, rooms.KindInvite, []byte(c.xid), x, c.creator)
	c.give(0, early)
	c.give(1, early)
	for i := range c.nets {
		if in, _ := c.agentIn(i, x); in {
			t.Fatalf("node %d: an invite older than the removal brought the agent back", i)
		}
	}
	back, _ := c.postTo(c.ck, rooms.KindInvite, []byte(c.xid), x, rid, m2id)
	c.give(1, back)
	c.give(0, back)
	for i := range c.nets {
		if in, removed := c.agentIn(i, x); !in || removed {
			t.Fatalf("node %d: after an invite naming it: in %v, removed %v", i, in, removed)
		}
	}
}

// Only the room's creator removes another node's agent; a member's leave
// that names its own agent takes that agent out; a leave naming an agent
// without its node is refused.
func TestAgentRemovalByAMemberIsRefused(t *testing.T) {
	c := newCrossing(t, time.Now())
	human0 := string(identity.HumanAgent) + "@" + c.nets[0].ID(0).String()
	before := c.count(0)
	forged, _ := c.postTo(c.xk, rooms.KindLeave, nil, human0, c.x1)
	_ = c.mgr(0).ProcessBatch(c.id, forged)
	if c.count(0) != before {
		t.Fatal("node 0 took a member's removal of another node's agent")
	}
	if in, _ := c.agentIn(0, human0); !in {
		t.Fatal("node 0's agent is out after a member's forged removal")
	}
	// x's leave naming its own agent is x's agent leaving.
	c2 := newCrossing(t, time.Now())
	x := string(identity.HumanAgent) + "@" + c2.xid.String()
	own, _ := c2.postTo(c2.xk, rooms.KindLeave, nil, x, c2.x1)
	c2.give(0, own)
	if in, removed := c2.agentIn(0, x); in || removed {
		t.Fatalf("x's own named leave: in %v, removed %v", in, removed)
	}
	noNode, _ := c2.postTo(c2.ck, rooms.KindLeave, nil, "bot", c2.creator)
	n := c2.count(0)
	_ = c2.mgr(0).ProcessBatch(c2.id, noNode)
	if c2.count(0) != n {
		t.Fatal("a leave naming an agent without its node was taken")
	}
}

// In a room created before AgentRemovalSince, a leave that names an agent
// is its author's agent leaving, as every node read it then.
func TestAgentRemovalInAnOlderRoom(t *testing.T) {
	c := newCrossing(t, time.UnixMilli(rooms.AgentRemovalSince).Add(-time.Hour))
	x := string(identity.HumanAgent) + "@" + c.xid.String()
	cid, _ := peer.IDFromPrivateKey(c.ck)
	creator := string(identity.HumanAgent) + "@" + cid.String()
	removal, _ := c.postTo(c.ck, rooms.KindLeave, nil, x, c.creator)
	c.give(0, removal)
	if in, _ := c.agentIn(0, x); !in {
		t.Fatal("an older room took the named agent out")
	}
	if in, _ := c.agentIn(0, creator); in {
		t.Fatal("an older room did not read the leave as its author's")
	}
	_, err := c.mgr(0).RemoveAgent(context.Background(), c.id, identity.AgentAddr{Name: identity.HumanAgent, Peer: c.xid}, identity.HumanAgent)
	if err == nil {
		t.Fatal("removed an agent in a room that is not this node's")
	}
}

// RemoveAgent end to end on live nodes: the creator removes an agent of a
// member node; the member node refuses the agent's posts and claims with an
// error that says so, its other agents and its node stay, records survive a
// restart, and an invite naming the agent takes it back.
func TestRemoveAgent(t *testing.T) {
	nt := startNet(t, 2)
	ctx := context.Background()
	id := openRoom(t, nt, 1)
	bot := identity.AgentAddr{Name: "bot", Peer: nt.ID(1)}
	if _, err := mgr(nt, 0).InviteAgent(ctx, id, nt.ID(1), "bot", identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		a, ok, _ := mgr(nt, 1).AgentState(id, bot.String())
		return ok && a.In
	}, "bot to be in on node 1")
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: "bot", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr(nt, 1).RemoveAgent(ctx, id, identity.AgentAddr{Name: identity.HumanAgent, Peer: nt.ID(0)}, identity.HumanAgent); !errors.Is(err, rooms.ErrNotCreator) {
		t.Fatalf("a member removed the creator's agent: %v", err)
	}
	if _, err := mgr(nt, 0).RemoveAgent(ctx, id, bot, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr(nt, 0).RemoveAgent(ctx, id, bot, identity.HumanAgent); !errors.Is(err, rooms.ErrNotMember) {
		t.Fatalf("removed twice: %v", err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		a, ok, _ := mgr(nt, 1).AgentState(id, bot.String())
		return ok && !a.In && a.Removed()
	}, "bot to be out on node 1")
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: "bot", Text: "still here"}); !errors.Is(err, rooms.ErrAgentLeft) {
		t.Fatalf("bot spoke after its removal: %v", err)
	}
	if _, err := mgr(nt, 1).Post(ctx, id, "bot", rooms.KindClaim, []byte{0xa0}); !errors.Is(err, rooms.ErrAgentLeft) {
		t.Fatalf("bot claimed after its removal: %v", err)
	}
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "the node stays"}); err != nil {
		t.Fatal(err)
	}
	nt.Crash(1)
	nt.Restart(1)
	if a, ok, err := mgr(nt, 1).AgentState(id, bot.String()); err != nil || !ok || a.In || !a.Removed() {
		t.Fatalf("after a restart: %+v %v %v", a, ok, err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		_, err := mgr(nt, 0).InviteAgent(ctx, id, nt.ID(1), "bot", identity.HumanAgent)
		return err == nil
	}, "an invite of bot once node 1 is back")
	nt.WaitFor(20*time.Second, func() bool {
		a, ok, _ := mgr(nt, 1).AgentState(id, bot.String())
		return ok && a.In
	}, "bot to be back on node 1")
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: "bot", Text: "back"}); err != nil {
		t.Fatal(err)
	}
}
