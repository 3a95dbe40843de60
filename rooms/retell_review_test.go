package rooms_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestToldBackWhenLastOwnEventIsAnAgentsLeave (review r3): since the copy
// of node 1's home, node 1 joined node 0's room, an agent of node 1's spoke
// there and then left (its session ended); node 1 itself stays a member
// (its human agent is still in). Put back on the copy, node 1 must be told
// the room back. The teller sends node 1's latest own event (tellBack:
// committed[p]), here the agent's leave, and checkTellBack refuses any
// leave as evidence: every tell-back is refused and the node never gets
// its room back, although it is a member by everyone's account.
func TestToldBackWhenLastOwnEventIsAnAgentsLeave(t *testing.T) {
	nt := startNet(t, 2)
	ctx := context.Background()
	waitConnected(t, nt, 0, 1)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)

	id := roomOf(t, nt, 0, "agentleft", 1)
	say(t, nt, 1, id, "the human speaks")
	worker := identity.AgentName("worker")
	if _, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: worker, Text: "worker here"}); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr(nt, 1).Leave(ctx, id, worker); err != nil {
		t.Fatal(err)
	}
	// create, invite, join, two messages, the agent's leave.
	waitConverged(t, nt, id, 6, 20*time.Second, 0, 1)

	restore(nt, 1, old)
	nt.WaitFor(60*time.Second, func() bool {
		_, err := mgr(nt, 1).Get(id)
		return err == nil
	}, "node 1 to be told back the room it is still a member of (its latest own event is an agent's leave)")
}

// TestToldBackRepeatedNoticesBoundSessions (review r3): a trusted teller
// (node 0, a contact of node 1's, member of none of its rooms) keeps
// sending the same notice for a room provisional on node 1, and stalls
// the catch-ups it is asked for. Each notice for a provisional room spawns
// a catch-up of its own (takeTellBack → catchUpToldBack → syncWith, past
// requestSync's one-session-per-peer guard), so node 1 runs as many
// concurrent sessions with the teller as it sent notices: goroutines and
// streams without bound, and pv.running never falls to 0 while they run
// (a found-out room is not dropped meanwhile). One session per teller at a
// time is enough.
func TestToldBackRepeatedNoticesBoundSessions(t *testing.T) {
	t.Parallel() // waits 5 s for what must not happen, sets no package knob
	nt := contactNet(t, 2)
	ctx := context.Background()
	waitConnected(t, nt, 0, 1)
	nt.Befriend(t, 0, 1)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	id, err := mgr(nt, 1).Create(ctx, "spammed", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	create, _ := roomWires(t, nt, 1, id, 1)
	restore(nt, 1, old)
	waitConnected(t, nt, 1, 0)

	var open, most atomic.Int64
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	nt.Node(0).Host().SetStreamHandler(rooms.ProtocolSync, func(s network.Stream) {
		n := open.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		defer open.Add(-1)
		select { // stall: answer nothing
		case <-release:
		case <-time.After(30 * time.Second):
		}
		s.Reset()
	})
	const notices = 40
	for k := range notices {
		if err := rooms.SendTellBack(ctx, nt.Node(0).Host(), nt.ID(1), id, create, nil, create); err != nil {
			t.Fatalf("notice %d: %v", k, err)
		}
	}
	if !mgr(nt, 1).Provisional(id) {
		t.Fatal("the room told back is not provisional")
	}
	if nodetest.Poll(5*time.Second, func() bool { return most.Load() > 2 }) {
		t.Fatalf("node 1 ran %d concurrent catch-up sessions with one teller after %d notices of one room", most.Load(), notices)
	}
}

// TestToldBackStaleMemberDoesNotReopenLeftRoomAndFork (review r3): node 2,
// a member of node 0's room and a contact of node 1's (trusted to invite,
// known to node 1's older copy too), is down when node 1 leaves the room.
// Node 1 is then put back on a copy taken before it joined; node 0 (which
// holds the leave) is down; node 2 comes back. Node 2, honest but stale,
// still counts node 1 in and tells the room back with node 1's last post:
// its catch-up is complete and shows node 1 in, so the room is confirmed
// at once, without the user, although node 1 left it. Worse, node 1's own
// seq is learnt from node 2, which lacks the leave: node 1's next post
// takes the seq of its own leave, a fork of its own chain (equivocation),
// the very thing the rollback fix exists to prevent. The documented gap
// ("until then the node is in a room it left") does not say that the node
// forks. A room must not be confirmed on one member's word while it can
// be the node's own later events that member lacks; at the least, the
// node must not post there.
func TestToldBackStaleMemberDoesNotReopenLeftRoomAndFork(t *testing.T) {
	t.Parallel() // waits on timers, sets no package knob
	nt := contactNet(t, 3)
	ctx := context.Background()
	for _, p := range [][2]int{{0, 1}, {0, 2}, {2, 1}} {
		waitConnected(t, nt, p[0], p[1])
		nt.Befriend(t, p[0], p[1])
	}
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)
	waitConnected(t, nt, 1, 2)

	id := openRoom(t, nt, 1, 2)
	say(t, nt, 1, id, "last words")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 2, id, "last words") }, "node 2 to hold node 1's post")
	nt.Crash(2)
	if _, err := mgr(nt, 1).LeaveNode(ctx, id, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	waitOut(t, nt, 0, 1, id)
	leave, _, err := rooms.Decode(ownLeave(t, nt, 0, 1, id))
	if err != nil {
		t.Fatal(err)
	}

	nt.Crash(0)
	restore(nt, 1, old)
	nt.Restart(2)
	waitConnected(t, nt, 1, 2)
	// Node 2 tells the room back and node 1 catches up from it: node 1
	// hears node 2, and that alone does not confirm the room.
	nt.WaitFor(40*time.Second, func() bool {
		_, err := mgr(nt, 1).Get(id)
		return err == nil || mgr(nt, 1).ProvisionalHeard(id) > 0
	}, "node 1 to catch up from node 2 in the room told back")
	if _, err := mgr(nt, 1).Get(id); err != nil {
		return // not reopened: as it should be
	}
	var facts []string
	facts = append(facts, "node 1 holds open again, without its user, a room it left (told back by a stale member)")
	eid, err := mgr(nt, 1).Say(ctx, id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "after the restore"})
	if err == nil {
		if v, err := mgr(nt, 1).Event(id, eid); err == nil && v.Seq <= leave.Seq {
			facts = append(facts, fmt.Sprintf("node 1's post there has seq %d, its own leave seq %d: a fork of its own chain", v.Seq, leave.Seq))
		}
	} else {
		facts = append(facts, fmt.Sprintf("post: %v", err))
	}
	nt.Restart(0)
	waitConnected(t, nt, 1, 0)
	if !nodetest.Poll(40*time.Second, func() bool {
		_, err := mgr(nt, 1).Get(id)
		return err != nil
	}) {
		facts = append(facts, "node 0 (holding the leave) is back and node 1 still holds the room open after 40s")
	}
	t.Fatal(strings.Join(facts, "; "))
}
