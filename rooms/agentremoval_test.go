package rooms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
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
	if !errors.Is(err, rooms.ErrNotCreator) {
		t.Fatalf("node 0, not the creator, removed an agent: %v", err)
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

// A leave of a node that is out, naming another node's agent, that a
// (colluding) member built on, is taken as built on (the exception of
// checkAuthor) but still checked by the leave's rule: it takes nobody out,
// and node 0 lets its own agent post.
func TestAgentRemovalBuiltOnByAMemberIsRefused(t *testing.T) {
	c := newCrossing(t, time.Now())
	mk, mid := genKey(t)
	human0 := string(identity.HumanAgent) + "@" + c.nets[0].ID(0).String()
	invM, invMid := c.post(c.ck, rooms.KindInvite, []byte(mid), c.creator)
	xLeave, xLeaveID := c.post(c.xk, rooms.KindLeave, leaveBodyOf(0, c.xid), c.x1)
	forged, forgedID := c.postTo(c.xk, rooms.KindLeave, nil, human0, xLeaveID)
	built, _ := c.post(mk, rooms.KindMessage, []byte("built on it"), invMid, forgedID)
	c.give(0, invM, xLeave)
	_ = c.mgr(0).ProcessBatch(c.id, built)  // pooled: waits for forged
	_ = c.mgr(0).ProcessBatch(c.id, forged) // x is out: taken as built on
	a, ok, err := c.mgr(0).AgentState(c.id, human0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if !a.In || a.Removed() {
		t.Errorf("a non-creator's leave naming node 0's agent took it out: in %v removed %v", a.In, a.Removed())
	}
	if _, err := c.mgr(0).Say(context.Background(), c.id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "mine"}); errors.Is(err, rooms.ErrAgentLeft) {
		t.Errorf("node 0 refuses its own agent: %v", err)
	}
}

// An invite naming bot@x that crosses x's own leave (the leave later in
// display order): the node that had the leave first, before any record of
// bot@x, folds the leave in when the invite makes the record, so both nodes
// hold the agent out, and still after x is invited back.
func TestAgentRecordOfANodesLeaveInEitherOrder(t *testing.T) {
	c := newCrossing(t, time.Now())
	bot := "bot@" + c.xid.String()
	inv, _ := c.postTo(c.ck, rooms.KindInvite, []byte(c.xid), bot, c.creator)      // depth of x1
	xLeave, xLeaveID := c.post(c.xk, rooms.KindLeave, leaveBodyOf(0, c.xid), c.x1) // deeper
	c.give(0, xLeave, inv)
	c.give(1, inv, xLeave)
	back, _ := c.post(c.ck, rooms.KindInvite, []byte(c.xid), c.creator, xLeaveID)
	c.give(0, back)
	c.give(1, back)
	if !c.exchange() {
		t.Fatal("the nodes hold different events")
	}
	c.checkMember(true)
	var in [2]bool
	for i := range c.nets {
		a, ok, err := c.mgr(i).AgentState(c.id, bot)
		if err != nil || !ok {
			t.Fatalf("node %d: %v %v", i, ok, err)
		}
		in[i] = a.In
	}
	if in[0] != in[1] {
		t.Fatalf("same events, different records of %s: node 0 in %v, node 1 in %v", bot, in[0], in[1])
	}
}

// The removed agent's own node cannot undo the creator's removal with an
// invite of its own naming the agent: only another node's invite does.
func TestRemovedAgentsNodeCannotInviteItBack(t *testing.T) {
	c := newCrossing(t, time.Now())
	bot := "bot@" + c.xid.String()
	removal, rid := c.postTo(c.ck, rooms.KindLeave, nil, bot, c.x1)
	self, _ := c.postTo(c.xk, rooms.KindInvite, []byte(c.xid), bot, rid)
	c.give(0, removal, self)
	a, ok, err := c.mgr(0).AgentState(c.id, bot)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if a.In {
		t.Fatalf("x's own invite of its agent undid the creator's removal: %+v", a)
	}
}

func countKind(p localapi.Pending, kind string) int {
	n := 0
	for _, it := range p.Items {
		if it.Kind == kind {
			n++
		}
	}
	return n
}

// The "removed" note is given once for a removal, also when the removed
// agent's record changes while it stays removed (here an invite naming it
// that is older than the removal in display order).
func TestRemovedNoteOnce(t *testing.T) {
	c := newCrossing(t, time.Now())
	ctx := context.Background()
	ib := c.nets[0].Node(0).Inbox()
	human0 := string(identity.HumanAgent) + "@" + c.nets[0].ID(0).String()
	if _, err := ib.Take(ctx, "human"); err != nil { // the room is tracked
		t.Fatal(err)
	}
	removal, _ := c.postTo(c.ck, rooms.KindLeave, nil, human0, c.x1)
	c.give(0, removal)
	p, err := ib.Take(ctx, "human")
	if err != nil || countKind(p, "removed") != 1 {
		t.Fatalf("first take: %+v %v", p.Items, err)
	}
	early, _ := c.postTo(c.ck, rooms.KindInvite, []byte(c.nets[0].ID(0)), human0, c.creator)
	c.give(0, early)
	if a, _, _ := c.mgr(0).AgentState(c.id, human0); a.In || !a.Removed() {
		t.Fatalf("the early invite brought it back: %+v", a)
	}
	p, err = ib.Take(ctx, "human")
	if err != nil {
		t.Fatal(err)
	}
	if n := countKind(p, "removed"); n != 0 {
		t.Fatalf("told of the same removal again (%d more notes): %+v", n, p.Items)
	}
}

// An agent that left a room still posts the release of a claim it holds
// there (others may wait for it).
func TestReleaseAfterLeave(t *testing.T) {
	c := newCrossing(t, time.Now())
	ctx := context.Background()
	if _, err := c.mgr(0).Post(ctx, c.id, "bot", rooms.KindClaim, []byte{0xa0}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.mgr(0).Leave(ctx, c.id, "bot"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.mgr(0).Post(ctx, c.id, "bot", rooms.KindRelease, []byte{0xa0}); err != nil {
		t.Fatalf("release after leaving: %v", err)
	}
}

// The creator of a room made before AgentRemovalSince cannot take one agent
// of another node out (the room's members would read it as the creator's
// own agent leaving): RemoveAgent refuses with ErrRoomTooOld and posts
// nothing; removing the whole node still works.
func TestRemoveAgentInARoomTooOld(t *testing.T) {
	before, start := time.UnixMilli(rooms.AgentRemovalSince).Add(-time.Hour), time.Now()
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		if i == 0 {
			c.RoomClock = func() time.Time { return before.Add(time.Since(start)) }
		}
	}))
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
	n := eventCount(nt, 0, id)
	if _, err := mgr(nt, 0).RemoveAgent(ctx, id, bot, identity.HumanAgent); !errors.Is(err, rooms.ErrRoomTooOld) {
		t.Fatalf("an agent removed from a room older than the rule: %v", err)
	}
	if got := eventCount(nt, 0, id); got != n {
		t.Fatalf("the refused removal posted: %d events, were %d", got, n)
	}
	if _, err := mgr(nt, 0).Remove(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatalf("the node's removal in an older room: %v", err)
	}
}
