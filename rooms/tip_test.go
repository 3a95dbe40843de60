package rooms_test

import (
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
// are written as a tip every TipEvery arrivals, not with each event; after
// a crash the node reads them back exactly (the tip and the events after
// it), with several heads at once (two sides of a partition posting),
// and posts on with the next seq.
func TestTipKeepsHeadsAndSeqsOverACrash(t *testing.T) {
	nt := startNet(t, 3)
	id := openRoom(t, nt, 1, 2)
	// Concurrent posts from two nodes: well past two tips, with events
	// after the last one.
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
	waitConverged(t, nt, id, base+600, 60*time.Second, 0, 1, 2)
	// Two sides post apart: once they meet again, the room has two heads.
	nt.Partition([]int{0}, []int{1, 2})
	say(t, nt, 0, id, "left side")
	say(t, nt, 2, id, "right side")
	nt.Heal()
	waitConverged(t, nt, id, base+602, 30*time.Second, 0, 1, 2)
	before := stateOf(nt, 1, id)
	if len(before.heads) != 2 {
		t.Fatalf("heads before the crash: %v, want the two sides' posts", before.heads)
	}
	nt.Crash(1)

	db := openData(t, nt, 1)
	rid := string(id)
	if n := countKeys(t, db, schema.RoomHeadPrefix(rid)) + countKeys(t, db, schema.RoomVVPrefix(rid)); n != 0 {
		t.Fatalf("%d head or seq keys stored: events should write none", n)
	}
	v, err := db.Get(schema.RoomTip(rid))
	if err != nil {
		t.Fatalf("no tip stored after %d events: %v", base+602, err)
	}
	at, err := rooms.TipArrival(v)
	if err != nil {
		t.Fatal(err)
	}
	if at < rooms.TipEvery*2 || at >= base+602 {
		t.Fatalf("tip at arrival %d: want one at or past %d, before the last events", at, rooms.TipEvery*2)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	nt.Restart(1)
	if after := stateOf(nt, 1, id); !after.equal(before) {
		t.Fatalf("after the crash:\n%v\nbefore:\n%v", after, before)
	}
	say(t, nt, 1, id, "back")
	waitConverged(t, nt, id, base+603, 30*time.Second, 0, 1, 2)
	if vv, _ := mgr(nt, 0).VVs(id); vv[nt.ID(1)] != before.vv[nt.ID(1)]+1 {
		t.Fatalf("node 1 posted seq %d after %d", vv[nt.ID(1)], before.vv[nt.ID(1)])
	}
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
