package rooms_test

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// rawRoom builds a room's events by hand, each key's events in its own
// seq chain.
type rawRoom struct {
	t     *testing.T
	id    identity.RoomID
	nonce []byte
	seq   map[peer.ID]uint64
	depth map[rooms.ID]uint64
	keys  map[peer.ID]crypto.PrivKey
	// founded dates the create event (the room's rules follow it); the
	// other events are dated now
	founded time.Time
}

func newRawRoom(t *testing.T, creator crypto.PrivKey) *rawRoom {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	cid, _ := peer.IDFromPrivateKey(creator)
	return &rawRoom{t: t, id: rooms.DeriveRoomID(cid, nonce), nonce: nonce, seq: map[peer.ID]uint64{},
		depth: map[rooms.ID]uint64{}, keys: map[peer.ID]crypto.PrivKey{cid: creator}, founded: time.Now()}
}

// post seals the next event of key's author with parents.
func (rr *rawRoom) post(key crypto.PrivKey, kind rooms.Kind, body []byte, parents ...rooms.ID) ([]byte, rooms.ID) {
	rr.t.Helper()
	return rr.postTo(key, kind, body, "", parents...)
}

// postTo is post for an event that names an agent (to).
func (rr *rawRoom) postTo(key crypto.PrivKey, kind rooms.Kind, body []byte, to string, parents ...rooms.ID) ([]byte, rooms.ID) {
	rr.t.Helper()
	a, _ := peer.IDFromPrivateKey(key)
	rr.seq[a]++
	var depth uint64 = 1
	for _, p := range parents {
		depth = max(depth, rr.depth[p]+1)
	}
	at := time.Now()
	if kind == rooms.KindCreate {
		at = rr.founded
	}
	e := rooms.Event{Room: rr.id, Author: a, Agent: identity.HumanAgent, Seq: rr.seq[a], Depth: depth,
		Time: at.UnixMilli(), Kind: kind, Body: body, To: to, Parents: rooms.SortIDs(slices.Clone(parents))}
	w, eid, err := rooms.Seal(key, &e)
	if err != nil {
		rr.t.Fatal(err)
	}
	rr.depth[eid] = depth
	return w, eid
}

// crossing is a room held by two nodes that share no connection, each
// node 0 of its own net, built from raw events: a creator (a key no node
// holds) invited both nodes and a key x, and x posted once. Each node has
// the same events, and its join.
type crossing struct {
	*rawRoom
	t       *testing.T
	nets    []*nodetest.Net
	ck, xk  crypto.PrivKey
	xid     peer.ID
	creator rooms.ID // the creator's last event
	x1      rooms.ID // x's first post
}

func newCrossing(t *testing.T, founded time.Time) *crossing {
	t.Helper()
	ck, _ := genKey(t)
	xk, xid := genKey(t)
	rr := newRawRoom(t, ck)
	rr.founded = founded
	c := &crossing{rawRoom: rr, t: t, nets: []*nodetest.Net{contactsNet(t), contactsNet(t)}, ck: ck, xk: xk, xid: xid}
	var base [][]byte
	add := func(w []byte, id rooms.ID) rooms.ID { base = append(base, w); return id }
	last := add(c.post(ck, rooms.KindCreate, append(slices.Clone(c.nonce), "crossing"...)))
	for _, nt := range c.nets {
		last = add(c.post(ck, rooms.KindInvite, []byte(nt.ID(0)), last))
	}
	c.creator = add(c.post(ck, rooms.KindInvite, []byte(xid), last))
	c.x1 = add(c.post(xk, rooms.KindMessage, []byte("x speaks"), c.creator))
	for i := range c.nets {
		m := c.mgr(i)
		if err := m.OpenInvited(c.id, rooms.TopicFor(c.nonce)); err != nil {
			t.Fatal(err)
		}
		c.give(i, base...)
	}
	for i := range c.nets {
		c.waitFor(i, len(base)+1) // and its join
	}
	return c
}

func (c *crossing) mgr(i int) *rooms.Manager { return mgr(c.nets[i], 0) }

// give has node i process wires, one batch each.
func (c *crossing) give(i int, wires ...[]byte) {
	c.t.Helper()
	for _, w := range wires {
		if err := c.mgr(i).ProcessBatch(c.id, w); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *crossing) count(i int) uint64 { return eventCount(c.nets[i], 0, c.id) }

func (c *crossing) waitFor(i, n int) {
	c.t.Helper()
	if !nodetest.Poll(10*time.Second, func() bool { return c.count(i) == uint64(n) }) {
		c.t.Fatalf("node %d holds %d events, want %d", i, c.count(i), n)
	}
}

// ids lists the events node i holds, in display order (parents first).
func (c *crossing) ids(i int) []rooms.ID {
	c.t.Helper()
	vs, err := c.mgr(i).Log(c.id, 1000, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	out := make([]rooms.ID, len(vs))
	for k, v := range vs {
		out[k] = v.ID
	}
	return out
}

// wires returns node i's wires of events.
func (c *crossing) wires(i int, ids ...rooms.ID) [][]byte {
	c.t.Helper()
	out := make([][]byte, len(ids))
	for k, id := range ids {
		w, err := c.mgr(i).Wire(c.id, id)
		if err != nil {
			c.t.Fatal(err)
		}
		out[k] = w
	}
	return out
}

// exchange gives each node the events the other holds and it lacks, all
// in one batch, parents first (as a sync brings them), and reports whether both then
// hold the same events.
func (c *crossing) exchange() bool {
	c.t.Helper()
	for i := range c.nets {
		have := c.ids(1 - i)
		var lack []rooms.ID
		for _, id := range c.ids(i) {
			if !slices.Contains(have, id) {
				lack = append(lack, id)
			}
		}
		if len(lack) > 0 {
			if err := c.mgr(1-i).ProcessBatch(c.id, c.wires(i, lack...)...); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	return slices.Equal(rooms.SortIDs(c.ids(0)), rooms.SortIDs(c.ids(1)))
}

// connect connects the two nodes, so that their rooms sync.
func (c *crossing) connect() {
	c.t.Helper()
	h := c.nets[1].Node(0).Host()
	if err := c.nets[0].Node(0).Host().Connect(context.Background(), peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()}); err != nil {
		c.t.Fatal(err)
	}
}

// postBoth has each node post once.
func (c *crossing) postBoth(text string) {
	c.t.Helper()
	for i := range c.nets {
		if _, err := c.mgr(i).Say(context.Background(), c.id, rooms.SayArgs{Agent: identity.HumanAgent, Text: text}); err != nil {
			c.t.Fatalf("node %d: %v", i, err)
		}
	}
}

// A removal that crosses a post of the node removed (the creator counted
// its events before the post came) leaves both nodes with the same room,
// whichever of the two a node had first: the node that had the post first
// stored it and built on it, and the other takes it for that when their
// sync brings it. A later post of the removed node, which no member built
// on, stays out of both; so does the node when the crossing post is an
// invite of itself, even in a room older than the rule that a return names
// the leave.
func TestRemovalCrossingAPost(t *testing.T) {
	for _, kind := range []rooms.Kind{rooms.KindMessage, rooms.KindInvite} {
		t.Run(string(kind), func(t *testing.T) {
			founded := time.Now()
			if kind == rooms.KindInvite {
				founded = time.UnixMilli(rooms.NamedAdmitSince).Add(-24 * time.Hour)
			}
			c := newCrossing(t, founded)
			removal, _ := c.post(c.ck, rooms.KindLeave, leaveBodyOf(1, c.xid), c.x1)
			body := []byte("x speaks again")
			if kind == rooms.KindInvite {
				body = []byte(c.xid)
			}
			x2, x2id := c.post(c.xk, kind, body, c.x1)
			c.give(0, removal, x2) // x2 refused: x is out
			c.give(1, x2, removal) // x2 stored: x was in
			if c.count(0) == c.count(1) {
				t.Fatalf("both nodes hold %d events: the removal did not cross the post", c.count(0))
			}
			c.postBoth("after the removal")
			c.connect()
			same := func() bool { return slices.Equal(rooms.SortIDs(c.ids(0)), rooms.SortIDs(c.ids(1))) }
			if !nodetest.Poll(20*time.Second, same) {
				t.Fatalf("sync left the nodes with different events: %d and %d", c.count(0), c.count(1))
			}
			c.postBoth("and again")
			if !nodetest.Poll(20*time.Second, func() bool { return c.count(0) == c.count(1) && same() }) {
				t.Fatalf("later posts did not reach both nodes: %d and %d events", c.count(0), c.count(1))
			}
			for i := range c.nets {
				if ms, _ := c.mgr(i).Members(c.id); slices.Contains(ms, c.xid) {
					t.Fatalf("node %d has the removed node as a member again", i)
				}
			}
			x3, _ := c.post(c.xk, rooms.KindMessage, []byte("x, removed"), x2id)
			// Refused as not a member, or (to a node whose policy is its
			// contacts) as a stranger that no longer shares a room.
			refusals := func(i int) float64 {
				return rejected(t, c.nets[i].Node(0), "not_member") + rejected(t, c.nets[i].Node(0), "no_consent")
			}
			for i := range c.nets {
				before, refused := c.count(i), refusals(i)
				c.give(i, x3)
				if c.count(i) != before || refusals(i) != refused+1 {
					t.Fatalf("node %d took a post the removed node made after its removal, or refused it for another reason", i)
				}
			}
		})
	}
}

// Two leaves of one node that cross (its own and the creator's removal,
// which counted fewer of its events) take it out after the same event on
// both nodes, whichever came first: a first event of its return that does
// not follow its invite is refused by both.
func TestCrossingLeavesAgreeOnTheCutoff(t *testing.T) {
	c := newCrossing(t, time.Now())
	removal, rid := c.post(c.ck, rooms.KindLeave, leaveBodyOf(1, c.xid), c.x1)
	x2, x2id := c.post(c.xk, rooms.KindMessage, []byte("x speaks again"), c.x1)
	leave, lid := c.post(c.xk, rooms.KindLeave, leaveBodyOf(0, c.xid), x2id)
	c.give(0, removal, x2, leave) // x out after its event 1; the rest refused
	c.give(1, x2, leave, removal) // x out after its event 3, its leave
	c.postBoth("after the leaves")
	if !c.exchange() {
		t.Fatalf("the nodes hold different events: %d and %d", c.count(0), c.count(1))
	}
	back, bid := c.post(c.ck, rooms.KindInvite, []byte(c.xid), rid, lid)
	c.give(0, back)
	c.give(1, back)
	// x's next seq (4) is the first of its return: without its invite in
	// its past, refused by both.
	c.checkMember(true)
	x4, _ := c.post(c.xk, rooms.KindMessage, []byte("back, but not after the invite"), lid)
	c.seq[c.xid]--
	before := []uint64{c.count(0), c.count(1)}
	for i := range c.nets {
		c.give(i, x4)
		if c.count(i) != before[i] {
			t.Fatalf("node %d took x's first event after its return without the invite in its past", i)
		}
	}
	x4, _ = c.post(c.xk, rooms.KindMessage, []byte("back"), lid, bid)
	for i := range c.nets {
		c.give(i, x4)
		if c.count(i) != before[i]+1 {
			t.Fatalf("node %d refused x's first event after its return", i)
		}
	}
}

// inviteBack gives both nodes the creator's invite of x with parents, and
// fails the test unless x is then (in) or is not a member on both.
func (c *crossing) inviteBack(in bool, parents ...rooms.ID) {
	c.t.Helper()
	w, _ := c.post(c.ck, rooms.KindInvite, []byte(c.xid), parents...)
	c.give(0, w)
	c.give(1, w)
	c.checkMember(in)
}

// checkMember fails the test unless x is (in) or is not a member on both
// nodes.
func (c *crossing) checkMember(in bool) {
	c.t.Helper()
	for i := range c.nets {
		if ms, _ := c.mgr(i).Members(c.id); slices.Contains(ms, c.xid) != in {
			c.t.Fatalf("node %d: x a member %v, want %v", i, !in, in)
		}
	}
}

// An invite of a node made before its author knew the node had left (the
// two cross) brings it back on no node, whichever of the two a node had
// first; an invite that names the leave brings it back on both. A first
// event of the return must follow such an invite.
func TestInviteCrossingALeave(t *testing.T) {
	c := newCrossing(t, time.Now())
	leave, lid := c.post(c.xk, rooms.KindLeave, leaveBodyOf(0, c.xid), c.x1)
	human := string(identity.HumanAgent) + "@" + c.xid.String()
	// The creator says two things first, so its invite lands after the
	// leave in display order.
	m1w, m1 := c.post(c.ck, rooms.KindMessage, []byte("one"), c.creator)
	m2w, m2 := c.post(c.ck, rooms.KindMessage, []byte("two"), m1)
	crossed, cid := c.postTo(c.ck, rooms.KindInvite, []byte(c.xid), human, m2)
	c.give(0, m1w, m2w, leave, crossed)
	c.give(1, m1w, m2w, crossed, leave)
	// The invite names x's agent, after the leave: its record says in on
	// both nodes, but with x out the agent is out on both.
	for i := range c.nets {
		if a, ok, err := c.mgr(i).AgentState(c.id, human); err != nil || !ok || a.In {
			t.Fatalf("node %d: x's agent in %v (%v, %v) while x is out", i, a.In, ok, err)
		}
		if in, _ := c.mgr(i).Get(c.id); slices.Contains(in.Agents, human) {
			t.Fatalf("node %d lists x's agent as in while x is out", i)
		}
	}
	offer := func(wire []byte) []bool {
		t.Helper()
		took := make([]bool, len(c.nets))
		for i := range c.nets {
			before := c.count(i)
			c.give(i, wire)
			took[i] = c.count(i) > before
		}
		return took
	}
	// x's seq 3 is the first of a return.
	early, _ := c.post(c.xk, rooms.KindMessage, []byte("back after the crossed invite?"), lid, cid)
	c.seq[c.xid]--
	if took := offer(early); took[0] || took[1] {
		t.Fatalf("a first event after an invite that crossed the leave was taken (node 0: %v, node 1: %v)", took[0], took[1])
	}
	back, bid := c.post(c.ck, rooms.KindInvite, []byte(c.xid), lid, cid)
	c.give(0, back)
	c.give(1, back)
	if took := offer(early); took[0] || took[1] {
		t.Fatalf("a first event that follows only the crossed invite was taken (node 0: %v, node 1: %v)", took[0], took[1])
	}
	first, _ := c.post(c.xk, rooms.KindMessage, []byte("back"), lid, bid)
	if took := offer(first); !took[0] || !took[1] {
		t.Fatalf("a first event after the invite that names the leave was refused (node 0 took it: %v, node 1: %v)", took[0], took[1])
	}
}

// A node leaves on its own while the creator, not knowing, removes it and
// then invites it back naming the removal: the leave wins on both nodes,
// whichever of the two (own leave, or removal and invite) a node had first.
// Both then hold both leaves: an invite that names one of them brings the
// node back on neither, one that names both on both.
func TestLeaveCrossingAReturn(t *testing.T) {
	c := newCrossing(t, time.Now())
	own, oid := c.post(c.xk, rooms.KindLeave, leaveBodyOf(0, c.xid), c.x1)
	removal, rid := c.post(c.ck, rooms.KindLeave, leaveBodyOf(1, c.xid), c.x1)
	crossed, _ := c.post(c.ck, rooms.KindInvite, []byte(c.xid), rid)
	c.give(0, own, removal, crossed)
	c.give(1, removal, crossed, own) // own: refused for now, x is back
	c.postBoth("after the leaves")
	if !c.exchange() {
		t.Fatalf("the nodes hold different events: %d and %d", c.count(0), c.count(1))
	}
	c.checkMember(false)
	c.inviteBack(false, oid)
	c.inviteBack(true, oid, rid)
}

// A node leaves on its own while the creator removes it, and no member
// builds on the leave: a node that had the removal first takes the own
// leave all the same (the node's first of its own since it was taken
// out), so both hold both leaves, and an invite back that names both
// brings the node in on both; one that names the removal alone on neither.
func TestOwnLeaveCrossingARemoval(t *testing.T) {
	c := newCrossing(t, time.Now())
	own, oid := c.post(c.xk, rooms.KindLeave, leaveBodyOf(0, c.xid), c.x1)
	removal, rid := c.post(c.ck, rooms.KindLeave, leaveBodyOf(1, c.xid), c.x1)
	c.give(0, removal, own)
	c.give(1, own, removal)
	if c.count(0) != c.count(1) || !c.exchange() {
		t.Fatalf("the nodes hold different events: %d and %d", c.count(0), c.count(1))
	}
	// A second leave of its own, while out, is refused by both.
	again, _ := c.post(c.xk, rooms.KindLeave, leaveBodyOf(0, c.xid), oid)
	c.seq[c.xid]--
	for i := range c.nets {
		before := c.count(i)
		if c.give(i, again); c.count(i) != before {
			t.Fatalf("node %d took a second leave of the node's own while it was out", i)
		}
	}
	c.inviteBack(false, rid)
	c.inviteBack(true, oid, rid)
}

func leaveBodyOf(cutoff uint64, p peer.ID) []byte {
	b := make([]byte, 8, 8+len(p))
	for i := range 8 {
		b[7-i] = byte(cutoff >> (8 * i))
	}
	return append(b, p...)
}

// contactsNet starts one node whose rooms' policy is its contact service,
// as a node's is: the room's raw keys are strangers to it, let in while
// they share the room.
func contactsNet(t *testing.T) *nodetest.Net {
	return nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) { c.SyncInterval = time.Second }))
}

// A removed node is told of its removal by the creator and learns it at
// once, without waiting for anti-entropy (an hour here) and without the
// gossip copy (a node just invited is not in the remover's mesh yet, and
// the remover drops it from the mesh at once; here node 1's GossipSub
// ignores node 0): its next post is refused as out of the room.
func TestRemovedNodeIsTold(t *testing.T) {
	nt, id := startQuietNet(t)
	ctx := context.Background()
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: "human", Text: "before"}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return eventCount(nt, 0, id) == eventCount(nt, 1, id) }, "node 0 to hold node 1's post")
	// Removal notices that are not the creator removing the receiver are
	// refused: node 1 (not the creator) removing node 0, and node 0
	// removing a node that is not node 1.
	leave := func(i int, target peer.ID) []byte {
		t.Helper()
		e := rooms.Event{Room: id, Author: nt.ID(i), Agent: identity.HumanAgent, Seq: 99, Depth: 99,
			Time: time.Now().UnixMilli(), Kind: rooms.KindLeave, Body: leaveBodyOf(0, target), Parents: []rooms.ID{{1}}}
		w, _, err := rooms.Seal(nt.Node(i).Host().Peerstore().PrivKey(nt.ID(i)), &e)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	sk, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := peer.IDFromPrivateKey(sk)
	for _, c := range []struct {
		from, to int
		wire     []byte
		says     string
	}{
		{1, 0, leave(1, nt.ID(0)), "only its creator removes"},
		{0, 1, leave(0, stranger), "not " + nt.ID(0).String() + " removing this node"},
	} {
		err := rooms.SendInviteNotice(ctx, nt.Node(c.from).Host(), nt.ID(c.to), id, c.wire, "")
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Fatalf("a removal notice from node %d to node %d: %v", c.from, c.to, err)
		}
	}
	if _, left := mgr(nt, 0).LeftRoom(id); left {
		t.Fatal("node 0 is out of its own room after a forged removal notice")
	}

	nt.Node(1).PubSub().BlacklistPeer(nt.ID(0))
	if _, err := mgr(nt, 0).Remove(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		_, left := mgr(nt, 1).LeftRoom(id)
		return left
	}, "node 1 to learn of its removal")
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: "human", Text: "after"}); err == nil {
		t.Fatal("a removed node posted")
	}
}
