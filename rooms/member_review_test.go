package rooms_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// memberRoom is a room of nodes 0 (creator), 1 and 2, with node 2's key
// ready to sign as a hostile member, and the room's latest event.
type memberRoom struct {
	t    *testing.T
	nt   *nodetest.Net
	id   identity.RoomID
	key  crypto.PrivKey // node 2's
	head rooms.View
	seq  uint64 // node 2's highest seq
}

func newMemberRoom(t *testing.T) *memberRoom {
	nt := startNet(t, 3)
	id := openRoom(t, nt, 1, 2)
	mr := &memberRoom{t: t, nt: nt, id: id, key: loadKey(t, nt.Home(2))}
	vs := must(mgr(nt, 0).Log(id, 100, nil))
	mr.head = vs[len(vs)-1]
	for _, v := range vs {
		if v.Author == nt.ID(2) {
			mr.seq = max(mr.seq, v.Seq)
		}
	}
	return mr
}

// chain signs n messages of node 2 at seqs after mr.seq, each built on
// the one before, the first on parent (at depth).
func (mr *memberRoom) chain(n int, tag string, parent rooms.ID, depth uint64) ([][]byte, []rooms.ID) {
	var wires [][]byte
	var ids []rooms.ID
	for k := range n {
		e := rooms.Event{Room: mr.id, Author: mr.nt.ID(2), Agent: "mallory", Seq: mr.seq + 1 + uint64(k),
			Parents: []rooms.ID{parent}, Depth: depth + 1 + uint64(k), Time: time.Now().UnixMilli(),
			Kind: rooms.KindMessage, Body: fmt.Appendf(nil, "%s %d", tag, k)}
		w, eid, err := rooms.Seal(mr.key, &e)
		if err != nil {
			mr.t.Fatal(err)
		}
		wires, ids = append(wires, w), append(ids, eid)
		parent = eid
	}
	return wires, ids
}

// TestEquivocatingMemberIsKeptAndConverges: node 2, a member, signs two
// different events at its next seq and gives one to node 0 and the other
// to node 1 (as a targeted gossip would), then goes away. Both honest
// nodes count the fork, keep both events and end with the same log.
func TestEquivocatingMemberIsKeptAndConverges(t *testing.T) {
	mr := newMemberRoom(t)
	nt, id := mr.nt, mr.id
	a, _ := mr.chain(1, "to node 0", mr.head.ID, mr.head.Depth)
	b, _ := mr.chain(1, "to node 1", mr.head.ID, mr.head.Depth)
	nt.Crash(2)
	forks := counter(t, nt.Node(0), "parley_room_event_forks_total") + counter(t, nt.Node(1), "parley_room_event_forks_total")
	if err := mgr(nt, 0).ProcessBatch(id, a...); err != nil {
		t.Fatal(err)
	}
	if err := mgr(nt, 1).ProcessBatch(id, b...); err != nil {
		t.Fatal(err)
	}
	say(t, nt, 0, id, "after, on node 0")
	say(t, nt, 1, id, "after, on node 1")
	waitConverged(t, nt, id, 5+2+2, 30*time.Second, 0, 1)
	if got := counter(t, nt.Node(0), "parley_room_event_forks_total") + counter(t, nt.Node(1), "parley_room_event_forks_total"); got != forks+2 {
		t.Errorf("forks counted %v, want %v (one on each node)", got, forks+2)
	}
}

// TestEquivocatingMemberForkChainsConverge: node 2, a member, signs two
// chains of 120 events at the same seqs, gives one to node 0 and the
// other to node 1, and goes away. Both chains are valid; each node must
// end with both and the same log. The version vectors are equal, so each
// chain travels as a head the other lacks, then as wanted parents: one
// event a round.
func TestEquivocatingMemberForkChainsConverge(t *testing.T) {
	mr := newMemberRoom(t)
	nt, id := mr.nt, mr.id
	const n = 120
	a, _ := mr.chain(n, "to node 0", mr.head.ID, mr.head.Depth)
	b, _ := mr.chain(n, "to node 1", mr.head.ID, mr.head.Depth)
	nt.Crash(2)
	if err := mgr(nt, 0).ProcessBatch(id, a...); err != nil {
		t.Fatal(err)
	}
	if err := mgr(nt, 1).ProcessBatch(id, b...); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool {
		return eventCount(nt, 0, id) >= 5+n && eventCount(nt, 1, id) >= 5+n
	}, "each chain stored where it was given")
	began := time.Now()
	ok := nodetest.Poll(60*time.Second, func() bool {
		return eventCount(nt, 0, id) == 5+2*n && eventCount(nt, 1, id) == 5+2*n
	})
	t.Logf("after %v: node 0 holds %d events, node 1 %d (of %d)", time.Since(began).Round(time.Second),
		eventCount(nt, 0, id), eventCount(nt, 1, id), 5+2*n)
	if !ok {
		t.Fatalf("an equivocating member's fork chains of %d events keep the room split after 60 s", n)
	}
	waitConverged(t, nt, id, 5+2*n, 10*time.Second, 0, 1)
}

// TestSyncAnswerWithAnotherRoomsEventIsRefused: a member's catch-up
// answer carries an event of another room, signed by a member, whose
// parent this room does not hold. Gossip refuses such an event at once
// (the topic validator checks the room); a catch-up parked it in the
// room's pending pool, where it waited for a parent this room never
// holds, taking a place of the pool and asking members for that parent
// round after round. It is refused as malformed and nothing is pooled.
func TestSyncAnswerWithAnotherRoomsEventIsRefused(t *testing.T) {
	h := newHostile(t)
	nt, a := h.nt, h.nt.Node(0)
	other := identity.RoomID("abcdefghijklmnopqrstuvwxyz")
	e := h.event(1, h.seq[nt.ID(1)]+1)
	e.Room = other
	e.Parents = []rooms.ID{{7, 7, 7}}
	before := rejected(t, a, "malformed")
	pooled, _ := mgr(nt, 0).PendingHeld()
	h.serve(h.seal(1, e))
	nt.WaitFor(10*time.Second, func() bool { return rejected(t, a, "malformed") > before },
		"an event of another room in a catch-up to be refused as malformed")
	if got, _ := mgr(nt, 0).PendingHeld(); got != pooled {
		t.Fatalf("the pending pools hold %d events after the answer, %d before", got, pooled)
	}
}
