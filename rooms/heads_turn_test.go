package rooms_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestForkBeyondTheHelloHeadsSpreads: nodes 0 and 2 hold 100 events of
// node 1 on one parent (100 heads), and node 0 alone a fork of node 1's
// seq whose ID sorts last. A Hello carries at most 64 heads; they were the
// first 64 by ID, so the fork, whose seq is below every peer's version
// vector, stayed on node 0 until node 0 posted. Now each Hello carries 64
// from a place drawn at random, and the fork reaches node 2 by anti-entropy
// alone.
func TestForkBeyondTheHelloHeadsSpreads(t *testing.T) {
	t.Parallel() // waits on the fork to spread, sets no package knob
	const heads = 100
	nt := startNet(t, 3)
	id := openRoom(t, nt, 1, 2)
	vs, err := mgr(nt, 0).Log(id, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := vs[len(vs)-1]
	var seq uint64
	for _, v := range vs {
		if v.Author == nt.ID(1) {
			seq = max(seq, v.Seq)
		}
	}
	key := loadKey(t, nt.Home(1))
	seal := func(s uint64, body string) ([]byte, rooms.ID) {
		e := rooms.Event{Room: id, Author: nt.ID(1), Agent: "human", Seq: s, Parents: []rooms.ID{last.ID},
			Depth: last.Depth + 1, Time: time.Now().UnixMilli(), Kind: rooms.KindMessage, Body: []byte(body)}
		w, eid, err := rooms.Seal(key, &e)
		if err != nil {
			t.Fatal(err)
		}
		return w, eid
	}
	var wires [][]byte
	for k := 1; k <= heads; k++ {
		w, _ := seal(seq+uint64(k), fmt.Sprintf("h%d", k))
		wires = append(wires, w)
	}
	for _, i := range []int{0, 2} {
		if err := mgr(nt, i).ProcessBatch(id, wires...); err != nil {
			t.Fatal(err)
		}
	}
	var fork []byte
	var fid rooms.ID
	for k := 0; fid[0] != 0xff; k++ {
		fork, fid = seal(seq+1, fmt.Sprintf("fork %d", k))
	}
	if err := mgr(nt, 0).ProcessBatch(id, fork); err != nil {
		t.Fatal(err)
	}
	if n := len(mgr(nt, 0).Heads(id)); n <= rooms.MaxHeads {
		t.Fatalf("node 0 holds %d heads, want more than a Hello carries (%d)", n, rooms.MaxHeads)
	}
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		_, err := mgr(nt, 2).Wire(id, fid)
		return err == nil
	}, "the fork beyond the first %d heads to reach node 2", rooms.MaxHeads)
}
