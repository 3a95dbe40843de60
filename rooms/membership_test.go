package rooms_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

func addr(name string, nt *nodetest.Net, i int) string { return name + "@" + nt.ID(i).String() }

func agentsOf(nt *nodetest.Net, i int, id identity.RoomID) []string {
	in, err := mgr(nt, i).Get(id)
	if err != nil {
		return nil
	}
	return in.Agents
}

// waitConnected waits for nodes a and b to be connected (dialled if the
// DHT has not brought them together in 15 s).
func waitConnected(t *testing.T, nt *nodetest.Net, a, b int) {
	t.Helper()
	nt.WaitConnected(a, b)
}

func logHas(nt *nodetest.Net, i int, id identity.RoomID, text string) bool {
	vs, err := mgr(nt, i).Log(id, 10000, nil)
	if err != nil {
		return false
	}
	for _, v := range vs {
		if v.Text == text {
			return true
		}
	}
	return false
}

// TestAgentsAreMembers invites agents by name, on other nodes and on the
// creator's own node: every node shows the same member agents and the
// room's purpose; an agent that leaves cannot speak until invited again.
func TestAgentsAreMembers(t *testing.T) {
	nt := startNet(t, 3)
	ctx := context.Background()
	m0 := mgr(nt, 0)
	id, err := m0.CreateRoom(ctx, "release", "ship 1.0 by Friday", "alpha")
	if err != nil {
		t.Fatal(err)
	}
	waitConnected(t, nt, 0, 1)
	waitConnected(t, nt, 0, 2)
	for _, inv := range []struct {
		node int
		name identity.AgentName
	}{{1, "beta"}, {2, "gamma"}, {0, "delta"}} {
		if _, err := m0.InviteAgent(ctx, id, nt.ID(inv.node), inv.name, "alpha"); err != nil {
			t.Fatalf("invite %s: %v", inv.name, err)
		}
	}
	want := []string{addr("alpha", nt, 0), addr("beta", nt, 1), addr("delta", nt, 0), addr("gamma", nt, 2)}
	slices.Sort(want)
	for i := range 3 {
		nt.WaitFor(30*time.Second, func() bool { return slices.Equal(agentsOf(nt, i, id), want) },
			"node %d to list agents %v (has %v)", i, want, agentsOf(nt, i, id))
		in, _ := mgr(nt, i).Get(id)
		if in.Purpose != "ship 1.0 by Friday" || in.Name != "release" {
			t.Fatalf("node %d: name %q purpose %q", i, in.Name, in.Purpose)
		}
	}
	// Each invited node posted its join as the agent its invite named.
	vs, err := mgr(nt, 1).Log(id, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	joined := false
	for _, v := range vs {
		joined = joined || v.Kind == rooms.KindJoin && v.Author == nt.ID(1) && v.Agent == "beta"
		if v.Kind == rooms.KindCreate && v.Purpose != "ship 1.0 by Friday" {
			t.Fatalf("create event shows purpose %q", v.Purpose)
		}
	}
	if !joined {
		t.Fatal("node 1 did not join as beta")
	}
	// Inviting an agent that is in already posts nothing. (Node 0's own
	// events are counted: the other nodes' joins may still be arriving.)
	own := func() int {
		vs, err := m0.Log(id, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, v := range vs {
			if v.Author == nt.ID(0) {
				n++
			}
		}
		return n
	}
	before := own()
	if _, err := m0.InviteAgent(ctx, id, nt.ID(1), "beta", "alpha"); err != nil {
		t.Fatal(err)
	}
	if own() != before {
		t.Fatal("a second invite of a member agent posted an event")
	}

	// beta leaves: out everywhere, and its node refuses its words.
	if _, err := mgr(nt, 1).Leave(ctx, id, "beta"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		nt.WaitFor(20*time.Second, func() bool { return !slices.Contains(agentsOf(nt, i, id), addr("beta", nt, 1)) },
			"node %d to see beta leave", i)
	}
	_, err = mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: "beta", Text: "still here?"})
	if !errors.Is(err, rooms.ErrAgentLeft) {
		t.Fatalf("say after leave: %v", err)
	}
	// (Not a count of the log's events: another node's event may still
	// come in meanwhile, a CI flake.)
	if logHas(nt, 1, id, "still here?") {
		t.Fatal("a refused say changed the log")
	}
	// While the node catches up after an invite, the say waits (its join
	// may be on the way), here until its context ends; once the catch-up
	// is over, it is refused again.
	release := mgr(nt, 1).HoldInviteCatchUp(id)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = mgr(nt, 1).Say(short, id, rooms.SayArgs{Agent: "beta", Text: "caught up?"})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("say during a catch-up after an invite: %v, want it to wait", err)
	}
	release()
	if _, err = mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: "beta", Text: "still here?"}); !errors.Is(err, rooms.ErrAgentLeft) {
		t.Fatalf("say after the catch-up: %v", err)
	}
	// A new invite brings it back.
	if _, err := m0.InviteAgent(ctx, id, nt.ID(1), "beta", "alpha"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return slices.Contains(agentsOf(nt, 1, id), addr("beta", nt, 1)) }, "beta back")
	say(t, nt, 1, id, "back")
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: "beta", Text: "back again"}); err != nil {
		t.Fatal(err)
	}
}

// TestNodeLeavesAndComesBack: a node that leaves stops following the room
// and members stop counting it; a new invite brings it back with the
// history.
func TestNodeLeavesAndComesBack(t *testing.T) {
	nt := startNet(t, 3)
	ctx := context.Background()
	id := openRoom(t, nt, 1, 2)
	if _, err := mgr(nt, 2).LeaveNode(ctx, id, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		_, err := mgr(nt, 2).Get(id)
		return errors.Is(err, rooms.ErrUnknownRoom)
	}, "node 2 to drop the room")
	for _, i := range []int{0, 1} {
		nt.WaitFor(20*time.Second, func() bool {
			ms, _ := mgr(nt, i).Members(id)
			return !slices.Contains(ms, nt.ID(2))
		}, "node %d to see node 2 leave", i)
	}
	say(t, nt, 0, id, "after the leave")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 1, id, "after the leave") }, "node 1 to get the message")
	// Node 2 left: it has no room to store it in, and members refuse its sync.
	if err := mgr(nt, 0).SyncNow(ctx, id, nt.ID(2)); err == nil {
		t.Log("node 0 pulled from node 2 (allowed: it only takes what node 2 may still send)")
	}
	// The restart does not open it again.
	nt.Crash(2)
	nt.Restart(2)
	if _, err := mgr(nt, 2).Get(id); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("node 2 opened the room it left after a restart: %v", err)
	}
	// Invited again, it catches up and speaks.
	waitConnected(t, nt, 0, 2)
	back, err := mgr(nt, 0).Invite(ctx, id, nt.ID(2), identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	// The invite names node 2's leave among its parents: that makes it a
	// return on every node (an invite that crossed the leave is not one).
	var leave rooms.ID
	vs, err := mgr(nt, 0).Log(id, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Kind == rooms.KindLeave && v.Author == nt.ID(2) {
			leave = v.ID
		}
	}
	if ps, err := mgr(nt, 0).Parents(id, back); err != nil || !slices.Contains(ps, leave) {
		t.Fatalf("the invite back has parents %v (%v), not node 2's leave %s", ps, err, leave)
	}
	// It speaks at once: its post waits for the catch-up, in which the
	// history may come in batches before the invite's, and the join
	// follows the invite (before, the post was refused: "left the room").
	say(t, nt, 2, id, "I am back")
	if !logHas(nt, 2, id, "after the leave") || joins(nt, 2, id) != 2 {
		t.Fatalf("node 2 spoke before it caught up and joined again (%d joins)", joins(nt, 2, id))
	}
	for _, i := range []int{0, 1} {
		nt.WaitFor(30*time.Second, func() bool { return logHas(nt, i, id, "I am back") }, "node %d to hear node 2 again", i)
	}
}

// TestCreatorRemovesANode: only the creator removes; the removed node's
// later events are refused by every member, on gossip and on sync, and it
// gets nothing new.
func TestCreatorRemovesANode(t *testing.T) {
	nt := startNet(t, 3)
	ctx := context.Background()
	id := openRoom(t, nt, 1, 2)

	n := eventCount(nt, 1, id)
	if _, err := mgr(nt, 1).Remove(ctx, id, nt.ID(2), identity.HumanAgent); !errors.Is(err, rooms.ErrNotCreator) {
		t.Fatalf("remove by a non-creator: %v", err)
	} else if strings.Count(err.Error(), "only the room's creator") != 1 {
		t.Errorf("the refusal says the same thing twice: %q", err)
	}
	if _, err := mgr(nt, 0).Remove(ctx, id, nt.ID(0), identity.HumanAgent); err == nil {
		t.Fatal("the creator removed itself")
	}
	if eventCount(nt, 1, id) != n || eventCount(nt, 0, id) != n {
		t.Fatal("a refused remove changed the log")
	}

	if _, err := mgr(nt, 0).Remove(ctx, id, nt.ID(2), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1} {
		nt.WaitFor(20*time.Second, func() bool {
			ms, _ := mgr(nt, i).Members(id)
			return !slices.Contains(ms, nt.ID(2)) && !mgr(nt, i).MeshHas(id, nt.ID(2))
		}, "node %d to drop node 2 (members and mesh)", i)
	}
	// Node 2 may or may not have heard of its removal; either way nothing it
	// says now gets in, even when a member pulls from it.
	if _, err := mgr(nt, 2).Say(ctx, id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "let me in"}); err != nil &&
		!errors.Is(err, rooms.ErrUnknownRoom) && !errors.Is(err, rooms.ErrAgentLeft) && !errors.Is(err, rooms.ErrNotMember) {
		t.Fatal(err)
	}
	before := rejected(t, nt.Node(1), "not_member")
	if err := mgr(nt, 1).SyncNow(ctx, id, nt.ID(2)); err != nil {
		t.Logf("node 1 pulling from node 2: %v", err)
	}
	say(t, nt, 0, id, "members only")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 1, id, "members only") }, "node 1 to get the members' message")
	for _, i := range []int{0, 1} {
		if logHas(nt, i, id, "let me in") {
			t.Fatalf("node %d took an event of the removed node", i)
		}
	}
	t.Logf("node 1 refused %v events as not_member", rejected(t, nt.Node(1), "not_member")-before)
	// The removed node gets nothing new: members refuse its pulls.
	for _, i := range []int{0, 1} {
		err := mgr(nt, 2).SyncNow(ctx, id, nt.ID(i))
		if err == nil && logHas(nt, 2, id, "members only") {
			t.Fatalf("node 2 pulled the members' message from node %d", i)
		}
	}
	if logHas(nt, 2, id, "members only") {
		t.Fatal("node 2 received a message posted after its removal")
	}
	if _, err := mgr(nt, 0).Remove(ctx, id, nt.ID(2), identity.HumanAgent); err == nil || !strings.Contains(err.Error(), "not a member") {
		t.Fatalf("removing a node twice: %v", err)
	}
}

// TestClosedRoomAnswersItsWaiters: a node that learns of its own removal
// in the middle of a sync closes the room while the sync still waits on it
// (its barrier, its missing events) and a post may wait too. Each returns
// ErrClosed rather than waiting for a room goroutine that is gone. Node 1
// here holds its room across the close, as such a sync does.
func TestClosedRoomAnswersItsWaiters(t *testing.T) {
	nt := startNet(t, 2)
	ctx := context.Background()
	id := openRoom(t, nt, 1)
	barrier, missing, say := mgr(nt, 1).RoomWaits(id)
	if err := barrier(ctx); err != nil {
		t.Fatalf("barrier on the open room: %v", err)
	}
	if _, err := mgr(nt, 0).Remove(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		_, left := mgr(nt, 1).LeftRoom(id)
		return left
	}, "node 1 to close the room it was removed from")
	// Queuing on a closed room races with seeing it closed: try often.
	for k := range 10 {
		for name, wait := range map[string]func(context.Context) error{"barrier": barrier, "missing events": missing, "say": say} {
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := wait(wctx)
			cancel()
			if !errors.Is(err, rooms.ErrClosed) {
				t.Fatalf("%s on the closed room (try %d): %v, want ErrClosed", name, k, err)
			}
		}
	}
}

// TestRemovedNodeForgesNoWayBack: a removed node still holds its key and
// knows the room. It signs an invite of itself and a message, each reusing
// one of its seqs from before the removal (where a node's own events are
// still accepted), with the room's last head as parent, and serves them when
// the creator pulls from it; it also sends the creator an invite notice for
// the room, which would have the creator catch up from it. The creator
// refuses both events and the notice: the node stays out, nothing it forged
// is shown, and it cannot pull what was said after its removal.
func TestRemovedNodeForgesNoWayBack(t *testing.T) {
	nt := startNet(t, 2)
	ctx := context.Background()
	id := openRoom(t, nt, 1)
	a, b := nt.ID(0), nt.ID(1)
	say(t, nt, 1, id, "before the removal")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 0, id, "before the removal") }, "node 0 to have node 1's message")
	vs, err := mgr(nt, 1).Log(id, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	head := vs[len(vs)-1]
	var bSeq uint64
	for _, v := range vs {
		if v.Author == b {
			bSeq = max(bSeq, v.Seq)
		}
	}
	if bSeq < 2 {
		t.Fatalf("node 1 has %d events in the room, want at least 2", bSeq)
	}

	if _, err := mgr(nt, 0).Remove(ctx, id, b, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		ms, _ := mgr(nt, 0).Members(id)
		return !slices.Contains(ms, b)
	}, "node 0 to drop node 1")
	say(t, nt, 0, id, "said after the removal")

	key := loadKey(t, nt.Home(1))
	seal := func(e rooms.Event) []byte {
		t.Helper()
		w, _, err := rooms.Seal(key, &e)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	forged := func(seq uint64, kind rooms.Kind, body string) []byte {
		return seal(rooms.Event{Room: id, Author: b, Agent: identity.HumanAgent, Seq: seq, Parents: []rooms.ID{head.ID},
			Depth: head.Depth + 1, Time: time.Now().UnixMilli(), Kind: kind, Body: []byte(body)})
	}
	selfInvite := forged(bSeq, rooms.KindInvite, string(b))
	message := forged(bSeq-1, rooms.KindMessage, "forged after the removal")
	nt.Node(1).Host().SetStreamHandler(rooms.ProtocolSync, func(s network.Stream) {
		defer s.Close()
		if _, err := rooms.ReadHello(s, rooms.MaxFrame); err != nil {
			s.Reset()
			return
		}
		_ = rooms.WriteFrame(s, &rooms.Batch{Events: [][]byte{selfInvite, message}})
		_ = rooms.WriteFrame(s, &rooms.Batch{End: true})
	})

	// The notice of an invite to a room node 0 is in, from a node that is
	// not a member: refused, with no catch-up from the sender.
	if err := rooms.SendInviteNotice(ctx, nt.Node(1).Host(), a, id, forged(bSeq, rooms.KindInvite, string(a)), mgr(nt, 0).TopicOf(id)); err == nil ||
		!errors.Is(err, rooms.ErrInviteRefused) {
		t.Fatalf("node 1's invite notice to a room node 0 is in: %v, want it refused", err)
	}
	before := rejected(t, nt.Node(0), "not_member")
	if err := mgr(nt, 0).SyncNow(ctx, id, b); err != nil {
		t.Logf("node 0 pulling from node 1: %v", err)
	}
	member := func() bool { ms, _ := mgr(nt, 0).Members(id); return slices.Contains(ms, b) }
	nt.WaitFor(20*time.Second, func() bool {
		return rejected(t, nt.Node(0), "not_member") >= before+2 || member() || logHas(nt, 0, id, "forged after the removal")
	}, "node 0 to refuse or take the forged events")
	if member() {
		t.Fatal("node 0 took node 1 back as a member")
	}
	if logHas(nt, 0, id, "forged after the removal") {
		t.Fatal("node 0 shows the message node 1 forged after its removal")
	}
	// What node 1 gets when it pulls from node 0 with nothing in hand.
	st, err := nt.Node(1).Host().NewStream(ctx, a, rooms.ProtocolSync)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := rooms.WriteFrame(st, &rooms.Hello{Room: id, VV: map[peer.ID]uint64{}}); err != nil {
		t.Fatal(err)
	}
	_ = st.CloseWrite()
	for {
		bt, err := rooms.ReadBatch(st)
		if err != nil || bt.End {
			break
		}
		for _, w := range bt.Events {
			if e, _, err := rooms.Decode(w); err == nil && string(e.Body) == "said after the removal" {
				t.Fatal("node 1 pulled a message said after its removal")
			}
		}
	}
}

// inviteIntoUnopened has node from create a room and invite node to into
// it, while node to has the room open as from an earlier notice, none of
// its events stored yet; it returns the room and the invite's error.
func inviteIntoUnopened(t *testing.T, nt *nodetest.Net, from, to int) (identity.RoomID, error) {
	t.Helper()
	ctx := context.Background()
	id, err := mgr(nt, from).Create(ctx, "test", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr(nt, to).OpenInvited(id, mgr(nt, from).TopicOf(id)); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool {
		return nt.Node(from).Host().Network().Connectedness(nt.ID(to)) == network.Connected
	}, "node %d connected to node %d", to, from)
	_, err = mgr(nt, from).Invite(ctx, id, nt.ID(to), identity.HumanAgent)
	return id, err
}

// TestSecondInviteNoticeBeforeCatchUp: a node told of its invite twice
// (the inviter tells it again when it reconnects) may get the second
// notice while the catch-up the first began has not brought the create
// event: the room knows no member yet, so the notice is taken, not
// refused as from a non-member, and the node joins.
func TestSecondInviteNoticeBeforeCatchUp(t *testing.T) {
	nt := startNet(t, 2)
	id, err := inviteIntoUnopened(t, nt, 0, 1)
	if err != nil {
		t.Fatalf("invite of a node whose room has no event yet: %v", err)
	}
	nt.WaitFor(40*time.Second, func() bool { return hasJoined(nt, 1, id) }, "node 1 to join")
}

// gatedPolicy allows every node and every invite but trusts no invite
// it gets: such an invite opens a room only once the user accepts it.
type gatedPolicy struct{}

func (gatedPolicy) CanInvite(peer.ID) error  { return nil }
func (gatedPolicy) Allowed(peer.ID) error    { return nil }
func (gatedPolicy) TrustInvite(peer.ID) bool { return false }

// TestNoticeIntoUnknownRoomNeedsTrust: a room this node opened from an
// invite knows no member until its catch-up brings the create event; a
// notice for it meanwhile from a node that is neither its inviter nor
// trusted to invite is refused, so that node cannot have the room caught
// up from itself.
func TestNoticeIntoUnknownRoomNeedsTrust(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = gatedPolicy{}
		c.SyncInterval = time.Second
	}))
	if _, err := inviteIntoUnopened(t, nt, 1, 0); !errors.Is(err, rooms.ErrInviteRefused) {
		t.Fatalf("an untrusted node's notice into a room that knows no member yet: %v, want it refused", err)
	}
}

// TestPostRightAfterAnInviteWaitsForTheCatchUp: a node that opened a room
// on an invite is a member once its catch-up with the inviter stores the
// invite, which comes after the room's history. An agent that posts in
// the room as soon as it is listed (as one told of the invitation does,
// or a board claim once the board's earlier claims arrived) waits for
// that, and the post goes out. Before, it was refused as from a
// non-member for as long as the catch-up ran.
func TestPostRightAfterAnInviteWaitsForTheCatchUp(t *testing.T) {
	nt := startNet(t, 2)
	ctx := context.Background()
	id, err := mgr(nt, 0).Create(ctx, "long history", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		say(t, nt, 0, id, strings.Repeat("history ", 100)+string(rune('a'+i%26)))
	}
	waitConnected(t, nt, 0, 1)
	if _, err := mgr(nt, 0).Invite(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { _, err := mgr(nt, 1).Get(id); return err == nil }, "node 1 to open the room")
	caughtUp := hasJoined(nt, 1, id)
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: "bob", Text: "hello at once"}); err != nil {
		t.Fatalf("a post as soon as the room is open (caught up already: %v): %v", caughtUp, err)
	}
	if caughtUp {
		t.Log("node 1 had caught up before the post: the wait was not tested")
	}
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 0, id, "hello at once") }, "node 0 to hold node 1's post")
}
