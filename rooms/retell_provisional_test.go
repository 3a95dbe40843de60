package rooms_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// contactNet starts n nodes whose rooms' policy is the node's own: its
// contacts (a node deals with its contacts and the co-members of its
// rooms; only contacts' invites open a room at once).
func contactNet(t *testing.T, n int) *nodetest.Net {
	t.Helper()
	return nodetest.Start(t, n, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
	}))
}

// restore crashes node i, puts back its home from old, and restarts it.
func restore(nt *nodetest.Net, i int, old string) {
	nt.Crash(i)
	nt.RestoreData(i, old)
	nt.Restart(i)
}

// ownLeave returns the wire of node i's own leave of room id, read on node
// j.
func ownLeave(t *testing.T, nt *nodetest.Net, j, i int, id identity.RoomID) []byte {
	t.Helper()
	// Waited for: node j may hold node i out before it holds the leave (a
	// room node j opened from its invite knows no member until the create
	// event comes).
	var leave rooms.ID
	nt.WaitFor(40*time.Second, func() bool {
		vs, err := mgr(nt, j).Log(id, 10000, nil)
		if err != nil {
			return false
		}
		for _, v := range vs {
			if v.Kind == rooms.KindLeave && v.Author == nt.ID(i) && v.Target == nt.ID(i) {
				leave = v.ID
				return true
			}
		}
		return false
	}, "a leave of node %d's own in room %s on node %d", i, id, j)
	return wireOf(t, nt, j, id, leave)
}

// waitOut waits until node i holds that node out is out of room id.
func waitOut(t *testing.T, nt *nodetest.Net, i, out int, id identity.RoomID) {
	t.Helper()
	// Out, and by a leave it holds: a room node i opened from its invite
	// knows no member until the create event comes.
	nt.WaitFor(40*time.Second, func() bool {
		ms, err := mgr(nt, i).Members(id)
		if err != nil || slices.Contains(ms, nt.ID(out)) {
			return false
		}
		vs, err := mgr(nt, i).Log(id, 10000, nil)
		return err == nil && slices.ContainsFunc(vs, func(v rooms.View) bool { return v.Kind == rooms.KindLeave && v.Target == nt.ID(out) })
	}, "node %d to hold node %d out of the room", i, out)
}

// heldToldBack reports whether a room told back waits for node i's user.
func heldToldBack(nt *nodetest.Net, i int, id identity.RoomID) bool {
	for _, w := range mgr(nt, i).Invites() {
		if w.Room == id && w.ToldBack {
			return true
		}
	}
	return false
}

// TestToldBackRoomLeftAndRejoinedComesBack: since the copy of node 1's
// home, node 1 joined node 0's room, left it, was invited back and joined
// again. Told the room back after the restore, its catch-up replays node
// 1's old leave before the invite back: the room must be judged at the
// state the catch-up ends with (in), not closed at the leave. Before the
// fix, the replayed leave closed the room for good, recorded as left.
func TestToldBackRoomLeftAndRejoinedComesBack(t *testing.T) {
	nt := contactNet(t, 2)
	ctx := context.Background()
	waitConnected(t, nt, 0, 1)
	nt.Befriend(t, 0, 1)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)

	id := roomOf(t, nt, 0, "rejoined", 1)
	say(t, nt, 1, id, "first time")
	if _, err := mgr(nt, 1).LeaveNode(ctx, id, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	waitOut(t, nt, 0, 1, id)
	if _, err := mgr(nt, 0).Invite(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(40*time.Second, func() bool { return joins(nt, 1, id) == 2 }, "node 1 to join again")
	say(t, nt, 1, id, "back again")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 0, id, "back again") }, "node 0 to hold node 1's post")

	restore(nt, 1, old)
	nt.WaitFor(60*time.Second, func() bool {
		_, err := mgr(nt, 1).Get(id)
		return err == nil
	}, "node 1 to take the room back")
	if !logHas(nt, 1, id, "back again") {
		t.Fatal("the room was confirmed before node 1 held its own events")
	}
	sayRetry(t, nt, 1, id, "after the restore")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 0, id, "after the restore") }, "node 0 to get node 1's post")
	if _, left := mgr(nt, 1).LeftRoom(id); left {
		t.Fatal("node 1 recorded the room as left")
	}
	nt.Crash(1)
	nt.Restart(1)
	if _, err := mgr(nt, 1).Get(id); err != nil {
		t.Fatalf("after a restart, the room told back: %v", err)
	}
}

// TestToldBackFirstTellerServesNothing: node 1 is put back on a copy taken
// before it joined node 0's room (nodes 2 and 3 are members too, all four
// contacts of node 1's). Node 3 serves nothing: it tells the room back
// first, and its catch-up brings nothing. The room stays provisional: not
// listed, not open to the API, not postable, no record written. Node 2
// then tells it back too and is heard: its catch-up shows node 1 in, and
// the room is confirmed, postable with fresh seqs, and survives a restart.
// Before the fix, node 3's notice opened the room (listed at once) and
// node 2's was refused, as the room was open: it stayed empty.
func TestToldBackFirstTellerServesNothing(t *testing.T) {
	// Node 0, a member, stays down: the room waits for it ToldBackWait,
	// then is confirmed on the connected members' word.
	shortToldBackWait(t, 3*time.Second)
	nt := contactNet(t, 4)
	for _, p := range [][2]int{{0, 1}, {2, 1}, {3, 1}, {0, 2}, {0, 3}} {
		waitConnected(t, nt, p[0], p[1])
		nt.Befriend(t, p[0], p[1])
	}
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)

	id := openRoom(t, nt, 1, 2, 3)
	say(t, nt, 1, id, "mine")
	waitConverged(t, nt, id, 8, 40*time.Second, 0, 1, 2, 3)
	high := ownSeq(t, nt, 1, id)
	served := rooms.ServeEmptySync(nt.Node(3).Host())

	nt.Crash(0)
	nt.Crash(2)
	restore(nt, 1, old)
	waitConnected(t, nt, 1, 3)
	nt.WaitFor(40*time.Second, func() bool { return mgr(nt, 1).Provisional(id) && served() > 0 },
		"node 3 to tell the room back and serve nothing")
	if _, err := mgr(nt, 1).Get(id); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("a provisional room is open to the API: %v", err)
	}
	for _, in := range mgr(nt, 1).List() {
		if in.ID == id {
			t.Fatal("a provisional room is listed")
		}
	}
	if _, err := mgr(nt, 1).Say(context.Background(), id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "too soon"}); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("a post in a provisional room: %v, want it refused as an unknown room", err)
	}
	if mgr(nt, 1).HasRecord(id) {
		t.Fatal("a provisional room has a record")
	}

	nt.Restart(2)
	waitConnected(t, nt, 2, 1)
	nt.WaitFor(60*time.Second, func() bool {
		_, err := mgr(nt, 1).Get(id)
		return err == nil
	}, "node 2's tell-back to confirm the room")
	if !mgr(nt, 1).HasRecord(id) || mgr(nt, 1).Provisional(id) {
		t.Fatal("the room confirmed is still provisional, or has no record")
	}
	eid := sayRetry(t, nt, 1, id, "back")
	if v, err := mgr(nt, 1).Event(id, eid); err != nil || v.Seq != high+1 {
		t.Fatalf("node 1's post after the restore has seq %d (%v), want %d", v.Seq, err, high+1)
	}
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 2, id, "back") }, "node 2 to get node 1's post")
	if n := joins(nt, 1, id); n != 1 {
		t.Fatalf("node 1 holds %d joins of its own", n)
	}
	nt.Crash(1)
	nt.Restart(1)
	if _, err := mgr(nt, 1).Get(id); err != nil {
		t.Fatalf("after a restart, the room confirmed: %v", err)
	}
}

// TestToldBackLeftRoomNotReopened: since the copy of node 1's home, node 1
// joined two rooms of node 0's with node 2 (a contact of node 0's, a
// stranger to node 1's copy), and left one. Put back on the copy with
// node 0 down:
//   - node 2 tells back the room node 1 is in: it waits for the user (a
//     stranger's word), opens nothing until accepted, and once accepted is
//     confirmed by node 2's catch-up;
//   - a notice of the room node 1 left carrying its leave as its own
//     event is refused, from node 3 (a contact) as from node 2;
//   - carrying its last post before the leave, node 3's notice opens the
//     room provisionally only (node 3 holds nothing of it); node 2's waits
//     for the user, and accepted, its catch-up shows node 1 out: the room
//     is dropped with nothing written, and the same notice is refused.
//
// Before the fix a stranger's notice opened the room at once, and a leave
// was taken as evidence.
func TestToldBackLeftRoomNotReopened(t *testing.T) {
	// Node 0, a member, stays down: the room kept waits for it
	// ToldBackWait, then is confirmed on the connected members' word.
	shortToldBackWait(t, 3*time.Second)
	nt := contactNet(t, 4)
	ctx := context.Background()
	for _, p := range [][2]int{{0, 1}, {0, 2}, {3, 1}} {
		waitConnected(t, nt, p[0], p[1])
		nt.Befriend(t, p[0], p[1])
	}
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)

	gone := openRoom(t, nt, 1, 2)
	last := wireOf(t, nt, 1, gone, say(t, nt, 1, gone, "last words"))
	if _, err := mgr(nt, 1).LeaveNode(ctx, gone, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	waitOut(t, nt, 2, 1, gone)
	leave := ownLeave(t, nt, 2, 1, gone)
	goneCreate, goneInvite := roomWires(t, nt, 2, gone, 1)

	kept := openRoom(t, nt, 1, 2)
	say(t, nt, 1, kept, "still here")
	waitConverged(t, nt, kept, 6, 40*time.Second, 0, 1, 2)

	nt.Crash(0)
	restore(nt, 1, old)
	waitConnected(t, nt, 1, 2)
	waitConnected(t, nt, 1, 3)

	// The stranger's tell-back of the room node 1 is in waits.
	nt.WaitFor(40*time.Second, func() bool { return heldToldBack(nt, 1, kept) }, "node 2's tell-back to wait for the user")
	if mgr(nt, 1).Provisional(kept) || mgr(nt, 1).HasRecord(kept) {
		t.Fatal("a stranger's tell-back opened the room before the user accepted it")
	}
	if _, err := mgr(nt, 1).AcceptInvite(string(kept)); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(60*time.Second, func() bool {
		_, err := mgr(nt, 1).Get(kept)
		return err == nil
	}, "the accepted tell-back to be confirmed")

	// The leave is no evidence, from a contact or a stranger.
	for _, teller := range []int{3, 2} {
		err := rooms.SendTellBack(ctx, nt.Node(teller).Host(), nt.ID(1), gone, goneInvite, goneCreate, leave)
		if !errors.Is(err, rooms.ErrInviteRefused) || !strings.Contains(err.Error(), "is its leave") {
			t.Fatalf("node %d's notice with node 1's leave: %v, want it refused as a leave", teller, err)
		}
	}
	if mgr(nt, 1).Provisional(gone) || waits(nt, 1, gone) {
		t.Fatal("a notice carrying node 1's leave opened the room, or waits")
	}

	// A contact's notice with the post before the leave: provisional only.
	if err := rooms.SendTellBack(ctx, nt.Node(3).Host(), nt.ID(1), gone, goneInvite, goneCreate, last); err != nil {
		t.Fatalf("node 3's notice: %v", err)
	}
	if !mgr(nt, 1).Provisional(gone) {
		t.Fatal("node 3's notice did not open the room provisionally")
	}
	if _, err := mgr(nt, 1).Get(gone); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("the room node 1 left is open again: %v", err)
	}

	// The stranger's notice waits; accepted, its catch-up finds node 1 out.
	if err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), gone, goneInvite, goneCreate, last); err != nil {
		t.Fatalf("node 2's notice: %v", err)
	}
	if !heldToldBack(nt, 1, gone) {
		t.Fatal("a stranger's notice for a provisional room did not wait for the user")
	}
	if _, err := mgr(nt, 1).AcceptInvite(string(gone)); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(60*time.Second, func() bool {
		return !mgr(nt, 1).Provisional(gone) && mgr(nt, 1).ToldBackDropped("out") >= 1
	}, "the room node 1 left to be dropped")
	if mgr(nt, 1).HasRecord(gone) {
		t.Fatal("the room dropped left a record")
	}
	if _, err := mgr(nt, 1).Get(gone); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("the room node 1 left is open: %v", err)
	}
	err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), gone, goneInvite, goneCreate, last)
	if !errors.Is(err, rooms.ErrInviteRefused) || !strings.Contains(err.Error(), "this very evidence") {
		t.Fatalf("the same notice again: %v, want it refused", err)
	}
	nt.Crash(1)
	nt.Restart(1)
	if _, err := mgr(nt, 1).Get(gone); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("after a restart, the room node 1 left: %v", err)
	}
	if _, err := mgr(nt, 1).Get(kept); err != nil {
		t.Fatalf("after a restart, the room accepted: %v", err)
	}
}

// TestToldBackBounded: a teller cannot make a restored node hold more
// provisional rooms than MaxProvisionalPerTeller (nor more than
// MaxProvisional in all): past the bound its notices are refused and
// counted, and another teller is still heard. Node 1 created three rooms
// since the copy of its home; node 0 and node 2 (contacts, members of
// none, so they serve nothing and the rooms stay provisional) tell them
// back.
func TestToldBackBounded(t *testing.T) {
	defer func(by, all int32) {
		rooms.MaxProvisionalPerTeller.Store(by)
		rooms.MaxProvisional.Store(all)
	}(rooms.MaxProvisionalPerTeller.Load(), rooms.MaxProvisional.Load())
	rooms.MaxProvisionalPerTeller.Store(2)
	rooms.MaxProvisional.Store(3)
	nt := contactNet(t, 3)
	ctx := context.Background()
	for _, p := range [][2]int{{0, 1}, {2, 1}} {
		waitConnected(t, nt, p[0], p[1])
		nt.Befriend(t, p[0], p[1])
	}
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	var ids []identity.RoomID
	var creates [][]byte
	for _, name := range []string{"a", "b", "c", "d"} {
		id, err := mgr(nt, 1).Create(ctx, name, identity.HumanAgent)
		if err != nil {
			t.Fatal(err)
		}
		create, _ := roomWires(t, nt, 1, id, 1)
		ids, creates = append(ids, id), append(creates, create)
	}
	restore(nt, 1, old)
	waitConnected(t, nt, 1, 0)
	waitConnected(t, nt, 1, 2)
	tell := func(teller, k int) error {
		// The create event is the admitting event, and node 1's own.
		return rooms.SendTellBack(ctx, nt.Node(teller).Host(), nt.ID(1), ids[k], creates[k], nil, creates[k])
	}
	for k := range 2 {
		if err := tell(0, k); err != nil {
			t.Fatalf("node 0's notice %d: %v", k, err)
		}
	}
	if err := tell(0, 2); !errors.Is(err, rooms.ErrInviteRefused) || mgr(nt, 1).Provisional(ids[2]) {
		t.Fatalf("node 0's third notice: %v, want it refused over the bound per teller", err)
	}
	if err := tell(2, 2); err != nil || !mgr(nt, 1).Provisional(ids[2]) {
		t.Fatalf("node 2's notice: %v, want it taken", err)
	}
	if err := tell(2, 3); !errors.Is(err, rooms.ErrInviteRefused) || mgr(nt, 1).Provisional(ids[3]) {
		t.Fatalf("a notice past the bound in all: %v, want it refused", err)
	}
	if n := mgr(nt, 1).ToldBackDropped("cap"); n != 2 {
		t.Fatalf("%v notices counted as over the bounds, want 2", n)
	}
}

// trustsOne allows every node and lets every node invite, and trusts the
// invites of one node only (trusted; none while it is unset).
type trustsOne struct{ trusted *atomic.Value }

func (trustsOne) CanInvite(peer.ID) error { return nil }
func (trustsOne) Allowed(peer.ID) error   { return nil }
func (p trustsOne) TrustInvite(q peer.ID) bool {
	t, _ := p.trusted.Load().(peer.ID)
	return t != "" && q == t
}

// TestToldBackInvitedBackNotJoined: since the copy of node 1's home, node
// 1 joined a room (invited by node 2, whose invites it trusts), spoke,
// left, and was invited back by node 0, whose invites wait for the user;
// the user has not answered. After the restore, node 2 (modified) tells
// the room back with node 1's post from before the leave. The catch-up
// shows node 1 a member, admitted by node 0's invite and silent since:
// that is an invite its user never accepted, not a room it is in, so the
// room is dropped, nothing is posted (no join), and node 0's invite still
// waits. Before the fix the room was taken back and node 1 joined without
// its user's answer.
func TestToldBackInvitedBackNotJoined(t *testing.T) {
	trusted := new(atomic.Value)
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
		if i == 1 {
			c.RoomPolicy = trustsOne{trusted}
		} else {
			c.RoomPolicy = rooms.DefaultPolicy{}
		}
	}))
	trusted.Store(nt.ID(2))
	ctx := context.Background()
	waitConnected(t, nt, 0, 1)
	waitConnected(t, nt, 2, 1)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)
	waitConnected(t, nt, 1, 2)

	id := roomOf(t, nt, 0, "invited back", 2)
	if _, err := mgr(nt, 2).Invite(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(40*time.Second, func() bool { return hasJoined(nt, 1, id) }, "node 1 to join")
	post := wireOf(t, nt, 1, id, say(t, nt, 1, id, "before I left"))
	if _, err := mgr(nt, 1).LeaveNode(ctx, id, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	waitOut(t, nt, 0, 1, id)
	waitOut(t, nt, 2, 1, id)
	if _, err := mgr(nt, 0).Invite(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return waits(nt, 1, id) }, "node 0's invite to wait for node 1's user")
	nt.WaitFor(20*time.Second, func() bool {
		ms, err := mgr(nt, 2).Members(id)
		return err == nil && slices.Contains(ms, nt.ID(1))
	}, "node 2 to hold node 0's invite of node 1")
	create, invite := roomWires(t, nt, 2, id, 1)

	restore(nt, 1, old)
	waitConnected(t, nt, 1, 2)
	if err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), id, invite, create, post); err != nil {
		t.Fatalf("node 2's notice: %v", err)
	}
	nt.WaitFor(40*time.Second, func() bool {
		return !mgr(nt, 1).Provisional(id) && mgr(nt, 1).ToldBackDropped("out") >= 1
	}, "the room told back to be dropped")
	if _, err := mgr(nt, 1).Get(id); !errors.Is(err, rooms.ErrUnknownRoom) || mgr(nt, 1).HasRecord(id) {
		t.Fatalf("the room node 1 was only invited back to is open or recorded: %v", err)
	}
	nt.WaitFor(40*time.Second, func() bool { return waits(nt, 1, id) }, "node 0's invite to wait again for node 1's user")
	vs, err := mgr(nt, 0).Log(id, 10000, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range vs {
		if v.Author == nt.ID(1) && v.Kind == rooms.KindJoin {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("node 0 holds %d joins of node 1's, want 1 (none since the invite back)", n)
	}
}
