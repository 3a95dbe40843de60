package rooms_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// roomState is what a room's tip keeps: its heads (with depths) and its
// version vector.
type roomState struct {
	heads map[rooms.ID]uint64
	vv    map[peer.ID]uint64
}

func stateOf(nt *nodetest.Net, i int, id identity.RoomID) roomState {
	vv, _ := mgr(nt, i).VVs(id)
	return roomState{heads: mgr(nt, i).Heads(id), vv: vv}
}

func (s roomState) equal(o roomState) bool {
	return maps.Equal(s.heads, o.heads) && maps.Equal(s.vv, o.vv)
}

func (s roomState) String() string {
	return fmt.Sprintf("%d heads %v, version vector %v", len(s.heads), s.heads, s.vv)
}

// openData opens a crashed node's store.
func openData(t *testing.T, nt *nodetest.Net, i int) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(nt.Home(i), node.DataDirName), nil)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// countKeys counts the keys with prefix.
func countKeys(t *testing.T, db *store.DB, prefix []byte) int {
	t.Helper()
	n := 0
	if err := db.Scan(prefix, func(_, _ []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTipKeepsHeadsAndSeqsOverACrash: a room's heads and version vector
// are written as a tip every few hundred arrivals, not with each event;
// after a crash the node reads them back exactly (the tip and the events
// after it), with two heads at once (two sides of a partition posting),
// and posts on with the next seq. With a tip after every batch the state
// comes from the tip alone.
func TestTipKeepsHeadsAndSeqsOverACrash(t *testing.T) {
	for _, every := range []int{rooms.DefaultTipEvery, 1} {
		t.Run(fmt.Sprintf("every %d", every), func(t *testing.T) {
			t.Cleanup(rooms.SetTipEvery(every))
			tipOverACrash(t, every)
		})
	}
}

func tipOverACrash(t *testing.T, every int) {
	nt := startNet(t, 3)
	id := openRoom(t, nt, 1, 2)
	// Concurrent posts from two nodes: well past two default tips.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, i := range []int{0, 1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 300 {
				if _, err := mgr(nt, i).Say(context.Background(), id, rooms.SayArgs{Agent: identity.HumanAgent, Text: fmt.Sprintf("from %d: %d", i, k)}); err != nil {
					errs <- fmt.Errorf("node %d say: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const base = 1 + 2*2 // create, two invites, two joins
	const all = base + 602
	waitConverged(t, nt, id, base+600, 60*time.Second, 0, 1, 2)
	// Two sides post apart: once they meet again, the room has two heads.
	nt.Partition([]int{0}, []int{1, 2})
	say(t, nt, 0, id, "left side")
	say(t, nt, 2, id, "right side")
	nt.Heal()
	waitConverged(t, nt, id, all, 30*time.Second, 0, 1, 2)
	before := stateOf(nt, 1, id)
	if len(before.heads) != 2 {
		t.Fatalf("heads before the crash: %v, want the two sides' posts", before.heads)
	}
	// A tip is written after its batch: wait for the last one's.
	var at uint64
	nt.WaitFor(10*time.Second, func() bool {
		at = tipArrival(t, nt, 1, id)
		return every > 1 || at == all
	}, "node 1's tip to cover all %d events", all)
	nt.Crash(1)

	db := openData(t, nt, 1)
	rid := string(id)
	if n := countKeys(t, db, schema.RoomHeadPrefix(rid)) + countKeys(t, db, schema.RoomVVPrefix(rid)); n != 0 {
		t.Fatalf("%d head or seq keys stored: events should write none", n)
	}
	v, err := db.Get(schema.RoomTip(rid))
	if err != nil {
		t.Fatalf("no tip stored after %d events: %v", all, err)
	}
	if at, err = rooms.TipArrival(v); err != nil {
		t.Fatal(err)
	}
	if every > 1 && (at < uint64(2*every) || at >= all) {
		t.Fatalf("tip at arrival %d: want one at or past %d, before the last events", at, 2*every)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	nt.Restart(1)
	if after := stateOf(nt, 1, id); !after.equal(before) {
		t.Fatalf("after the crash (tip at arrival %d):\n%v\nbefore:\n%v", at, after, before)
	}
	say(t, nt, 1, id, "back")
	waitConverged(t, nt, id, all+1, 30*time.Second, 0, 1, 2)
	if vv, _ := mgr(nt, 0).VVs(id); vv[nt.ID(1)] != before.vv[nt.ID(1)]+1 {
		t.Fatalf("node 1 posted seq %d after %d", vv[nt.ID(1)], before.vv[nt.ID(1)])
	}
}

// tipArrival reads the arrival of node i's stored tip of room id (0: none).
func tipArrival(t *testing.T, nt *nodetest.Net, i int, id identity.RoomID) uint64 {
	t.Helper()
	at, _, err := mgr(nt, i).StoredTipArrival(id)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// TestHeadAndSeqKeysBecomeATip: a store written before tips keeps each
// head and each author's seq as a key. Opened, the room reads them, writes
// a tip in their place and deletes them, and goes on as before.
func TestHeadAndSeqKeysBecomeATip(t *testing.T) {
	nt := startNet(t, 2)
	id := openRoom(t, nt, 1)
	for k := range 30 {
		say(t, nt, k%2, id, fmt.Sprintf("m%d", k))
	}
	waitConverged(t, nt, id, 33, 20*time.Second, 0, 1)
	before := stateOf(nt, 1, id)
	nt.Crash(1)

	// Make the store one written before tips.
	db := openData(t, nt, 1)
	rid := string(id)
	ops := []schema.Op{{Key: schema.RoomTip(rid), Delete: true}}
	for h, d := range before.heads {
		ops = append(ops, schema.Op{Key: schema.RoomHead(rid, h[:]), Val: schema.BE8(d)})
	}
	for a, s := range before.vv {
		ops = append(ops, schema.Op{Key: schema.RoomVV(rid, []byte(a)), Val: schema.BE8(s)})
	}
	if err := db.Apply(ops, true); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	nt.Restart(1)
	if after := stateOf(nt, 1, id); !after.equal(before) {
		t.Fatalf("read from the old keys:\n%v\nwant:\n%v", after, before)
	}
	say(t, nt, 1, id, "after the upgrade")
	say(t, nt, 0, id, "welcome")
	waitConverged(t, nt, id, 35, 20*time.Second, 0, 1)
	want := stateOf(nt, 1, id)
	nt.Crash(1)
	db = openData(t, nt, 1)
	if n := countKeys(t, db, schema.RoomHeadPrefix(rid)) + countKeys(t, db, schema.RoomVVPrefix(rid)); n != 0 {
		t.Fatalf("%d old head or seq keys left", n)
	}
	if _, err := db.Get(schema.RoomTip(rid)); err != nil {
		t.Fatalf("no tip written in their place: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	nt.Restart(1)
	if after := stateOf(nt, 1, id); !after.equal(want) {
		t.Fatalf("after a second restart:\n%v\nwant:\n%v", after, want)
	}
}

// TestDamagedEventAfterTheTip: an event stored after the last tip that
// cannot be read back on load (its bytes were changed) still counts in
// its author's seq, read from the sequence index: the author's next post
// is taken, not refused as a gap, and the damaged event is fetched again.
func TestDamagedEventAfterTheTip(t *testing.T) {
	t.Cleanup(rooms.SetTipEvery(4))
	nt := startNet(t, 2)
	id := openRoom(t, nt, 1)
	for k := range 7 {
		say(t, nt, k%2, id, fmt.Sprintf("m%d", k))
	}
	waitConverged(t, nt, id, 10, 20*time.Second, 0, 1)
	// The 11th arrival, alone in its batch, writes no tip (a tip every
	// four): the last one is before it.
	const text = "the last words of node zero before the crash"
	eid := say(t, nt, 0, id, text)
	waitConverged(t, nt, id, 11, 20*time.Second, 0, 1)
	before := stateOf(nt, 1, id)
	if _, ok := before.heads[eid]; !ok {
		t.Fatalf("heads %v: want the last event among them", before.heads)
	}
	if at := tipArrival(t, nt, 1, id); at < 8 || at > 10 {
		t.Fatalf("tip at arrival %d: want one before the last event", at)
	}
	nt.Crash(1)

	db := openData(t, nt, 1)
	key := schema.RoomEvent(string(id), eid[:])
	v, err := db.Get(key)
	if err != nil || !bytes.Contains(v, []byte(text)) {
		t.Fatalf("stored event: %v", err)
	}
	if err := db.Set(key, bytes.Replace(v, []byte("last"), []byte("lost"), 1)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	nt.Restart(1)
	if vv, _ := mgr(nt, 1).VVs(id); !maps.Equal(vv, before.vv) {
		t.Fatalf("version vector after the damage: %v, want %v", vv, before.vv)
	}
	if heads := mgr(nt, 1).Heads(id); heads[eid] != before.heads[eid] {
		t.Fatalf("heads after the damage: %v, want the damaged event at depth %d among them", heads, before.heads[eid])
	}
	readsTrue(t, nt, 1, id, eid, text)
	// Repaired, the event's parents are no heads any more.
	if heads := mgr(nt, 1).Heads(id); !maps.Equal(heads, before.heads) {
		t.Fatalf("heads after the repair: %v, want %v", heads, before.heads)
	}
	say(t, nt, 0, id, "after the damage")
	waitConverged(t, nt, id, 12, 20*time.Second, 0, 1)
}
