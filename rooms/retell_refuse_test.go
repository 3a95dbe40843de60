package rooms_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// roomWires returns, read on node i, the create event of room id and the
// invite of node target into it (nil if there is none).
func roomWires(t *testing.T, nt *nodetest.Net, i int, id identity.RoomID, target int) (create, invite []byte) {
	t.Helper()
	vs, err := mgr(nt, i).Log(id, 10000, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		w, err := mgr(nt, i).Wire(id, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := rooms.Decode(w)
		if err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case rooms.KindCreate:
			create = w
		case rooms.KindInvite:
			if p, err := e.InviteTarget(); err == nil && p == nt.ID(target) {
				invite = w
			}
		}
	}
	if create == nil {
		t.Fatalf("no create event of %s on node %d", id, i)
	}
	return create, invite
}

// wireOf returns the signed bytes of event eid of room id, once node i
// holds it.
func wireOf(t *testing.T, nt *nodetest.Net, i int, id identity.RoomID, eid rooms.ID) []byte {
	t.Helper()
	var w []byte
	nt.WaitFor(20*time.Second, func() bool {
		var err error
		w, err = mgr(nt, i).Wire(id, eid)
		return err == nil
	}, "node %d to hold event %s", i, eid)
	return w
}

// TestToldBackRemovedRoomStaysShut: node 1 posts while cut off from the
// room's creator, which removes it meanwhile; the post crossed the removal
// (its seq is after the removal's cutoff) and the other members hold it.
// Once node 1 has learnt its removal, a member that holds the crossing post
// (and, say, not yet the removal) tells node 1 the room back with that post
// as its own latest event: node 1 must refuse (it holds a record of the
// room, left) and keep the room shut, across a restart too. Before the fix
// the notice re-opened the room and recorded it as not left. A room node 1
// left by its own leave is refused the same way.
func TestToldBackRemovedRoomStaysShut(t *testing.T) {
	nt := startNet(t, 3)
	ctx := context.Background()
	id := openRoom(t, nt, 1, 2)
	say(t, nt, 1, id, "before")
	waitConverged(t, nt, id, 6, 20*time.Second, 0, 1, 2)
	create, invite := roomWires(t, nt, 0, id, 1)

	nt.Partition([]int{0, 2}, []int{1})
	nt.WaitFor(10*time.Second, func() bool {
		return nt.Node(1).Host().Network().Connectedness(nt.ID(0)) != network.Connected
	}, "the partition")
	crossing := say(t, nt, 1, id, "crossing")
	own := wireOf(t, nt, 1, id, crossing)
	if _, err := mgr(nt, 0).Remove(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.Heal()
	nt.ConnectAll()
	nt.WaitFor(40*time.Second, func() bool { _, left := mgr(nt, 1).LeftRoom(id); return left }, "node 1 to learn its removal")

	if err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), id, invite, create, own); err == nil {
		t.Error("node 1 took the room it was removed from back from a crossing post")
	}
	if _, err := mgr(nt, 1).Get(id); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("node 1 re-opened the room it was removed from (%v)", err)
	}

	// A room node 1 left itself: told back with its last post before the
	// leave (a member that has not learnt the leave, or a forged notice).
	gone := openRoom(t, nt, 1, 2)
	last := say(t, nt, 1, gone, "last words")
	lastWire := wireOf(t, nt, 1, gone, last)
	if _, err := mgr(nt, 1).LeaveNode(ctx, gone, identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	goneCreate, goneInvite := roomWires(t, nt, 0, gone, 1)
	if err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), gone, goneInvite, goneCreate, lastWire); err == nil {
		t.Error("node 1 took back a room it left")
	}

	nt.Crash(1)
	nt.Restart(1)
	for _, r := range []identity.RoomID{id, gone} {
		if _, err := mgr(nt, 1).Get(r); !errors.Is(err, rooms.ErrUnknownRoom) {
			t.Fatalf("room %s open on node 1 after a restart (%v)", r, err)
		}
		if _, left := mgr(nt, 1).LeftRoom(r); !left {
			t.Fatalf("node 1's record of room %s no longer says it is out", r)
		}
	}
}

// TestToldBackForgedNoticesRefused: node 1 is put back on a copy of its
// home taken before it joined room A (node 0's, node 3 invited too) and
// before it created room C. With A's members down, node 2, a contact of
// node 1's in no room, sends node 1 notices of A that each get one thing
// wrong: each is refused for that thing (its answer says which), and node
// 1 opens none of them, not even provisionally. The right notice then
// opens A provisionally (node 2 holds nothing of A, so A stays so).
func TestToldBackForgedNoticesRefused(t *testing.T) {
	nt := contactNet(t, 4)
	ctx := context.Background()
	for _, p := range [][2]int{{0, 1}, {0, 3}, {2, 1}} {
		waitConnected(t, nt, p[0], p[1])
		nt.Befriend(t, p[0], p[1])
	}
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)

	a := openRoom(t, nt, 1, 3)
	post := say(t, nt, 1, a, "mine")
	ownA := wireOf(t, nt, 0, a, post)
	createA, inviteOf1 := roomWires(t, nt, 0, a, 1)
	_, inviteOf3 := roomWires(t, nt, 0, a, 3)
	c, err := mgr(nt, 1).Create(ctx, "c", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	createC, _ := roomWires(t, nt, 1, c, 1) // node 1's own event, in another room

	nt.Crash(0)
	nt.Crash(3)
	nt.Crash(1)
	nt.RestoreData(1, old)
	nt.Restart(1)
	waitConnected(t, nt, 1, 2)

	// ownA with its signature's last byte changed: node 1's event, not
	// signed by node 1's key.
	badSig := slices.Clone(ownA)
	badSig[len(badSig)-1] ^= 1
	_, _, sigErr := rooms.Decode(badSig)
	if !errors.Is(sigErr, rooms.ErrBadSignature) {
		t.Fatalf("the tampered event decodes with %v", sigErr)
	}
	for _, f := range []struct {
		why                string
		event, create, own []byte
		answer             string // what node 1's refusal says
	}{
		{"own event signed by another node", inviteOf1, createA, createA, "is not this node's in the room"},
		{"own event from another room", inviteOf1, createA, createC, "is not this node's in the room"},
		{"own event with a wrong signature", inviteOf1, createA, badSig, sigErr.Error()},
		{"create event of another room", inviteOf1, createC, ownA, "no create event that founds the room"},
		{"invite of another node", inviteOf3, createA, ownA, "no invite of this node into the room"},
		{"no invite at all", ownA, createA, ownA, "no invite of this node into the room"},
	} {
		err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), a, f.event, f.create, f.own)
		if !errors.Is(err, rooms.ErrInviteRefused) || !strings.Contains(err.Error(), f.answer) {
			t.Errorf("%s: %v, want it refused with %q", f.why, err, f.answer)
		}
		if mgr(nt, 1).Provisional(a) || waits(nt, 1, a) {
			t.Fatalf("%s: node 1 opened the room provisionally, or holds it for the user", f.why)
		}
	}
	if err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), a, inviteOf1, createA, ownA); err != nil {
		t.Fatalf("the right notice: %v", err)
	}
	if !mgr(nt, 1).Provisional(a) {
		t.Fatal("the right notice did not open the room provisionally")
	}
	if _, err := mgr(nt, 1).Get(a); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("a room told back by a node that holds nothing of it is open to the API: %v", err)
	}
}

// TestToldBackRoomClosesWhenOut: node 1 is put back on a copy taken before
// it joined a room it was removed from since (a post of its crossed the
// removal). A member that holds the removal tells it the room back anyway,
// with the crossing post: node 1 lacks the room, so it opens it
// provisionally, but once caught up the room says node 1 is out, and it is
// dropped with nothing written (no record, not even a left one: the
// room was never confirmed), and the same notice is refused after.
func TestToldBackRoomClosesWhenOut(t *testing.T) {
	nt := startNet(t, 3)
	ctx := context.Background()
	waitConnected(t, nt, 0, 1)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	waitConnected(t, nt, 1, 0)

	id := openRoom(t, nt, 1, 2)
	nt.Partition([]int{0, 2}, []int{1})
	nt.WaitFor(10*time.Second, func() bool {
		return nt.Node(1).Host().Network().Connectedness(nt.ID(0)) != network.Connected
	}, "the partition")
	crossing := say(t, nt, 1, id, "crossing")
	own := wireOf(t, nt, 1, id, crossing)
	if _, err := mgr(nt, 0).Remove(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.Heal()
	nt.ConnectAll()
	nt.WaitFor(40*time.Second, func() bool {
		ms, err := mgr(nt, 2).Members(id)
		if err != nil {
			return false
		}
		for _, p := range ms {
			if p == nt.ID(1) {
				return false
			}
		}
		return true
	}, "node 2 to hold the removal")
	create, invite := roomWires(t, nt, 2, id, 1)

	nt.Crash(0)
	nt.Crash(1)
	nt.RestoreData(1, old)
	nt.Restart(1)
	waitConnected(t, nt, 1, 2)
	if err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), id, invite, create, own); err != nil {
		t.Logf("tell-back refused: %v", err)
	}
	nt.WaitFor(40*time.Second, func() bool {
		return !mgr(nt, 1).Provisional(id) && mgr(nt, 1).ToldBackDropped("out") == 1
	}, "node 1 to drop the room told back")
	if mgr(nt, 1).HasRecord(id) {
		t.Fatal("the room dropped left a record")
	}
	err := rooms.SendTellBack(ctx, nt.Node(2).Host(), nt.ID(1), id, invite, create, own)
	if !errors.Is(err, rooms.ErrInviteRefused) || !strings.Contains(err.Error(), "this very evidence") {
		t.Fatalf("the same notice again: %v, want it refused", err)
	}
	nt.Crash(1)
	nt.Restart(1)
	if _, err := mgr(nt, 1).Get(id); !errors.Is(err, rooms.ErrUnknownRoom) {
		t.Fatalf("the room is open on node 1 after a restart (%v)", err)
	}
}
