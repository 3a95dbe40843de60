package rooms_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/rooms"
)

// TestReleasedChainLargerThanOneWrite: a catch-up brings a chain of 600
// events children first, so the pending pool holds them until the parent,
// which comes last, releases the whole chain into one batch: about 0.9 MB
// of keys and values, more than one store transaction may hold. All of it
// is stored, in order. (Before batches were written in chunks, the write
// failed and the chain was dropped.)
func TestReleasedChainLargerThanOneWrite(t *testing.T) {
	h := newHostile(t)
	const n = 600
	body := bytes.Repeat([]byte("x"), 600)
	parent, depth := h.head.ID, h.head.Depth
	seq := h.seq[h.nt.ID(1)]
	evs := make([][]byte, n)
	for k := range n {
		e := h.event(1, seq+1+uint64(k))
		e.Parents, e.Depth, e.Body = []rooms.ID{parent}, depth+1, body
		w, id, err := rooms.Seal(h.keys[1], &e)
		if err != nil {
			t.Fatal(err)
		}
		evs[k], parent, depth = w, id, depth+1
	}
	slices.Reverse(evs)
	h.serve(evs...)
	want := uint64(5 + n)
	h.nt.WaitFor(30*time.Second, func() bool { return eventCount(h.nt, 0, h.id) == want },
		"node 0 to store the released chain of %d events", n)
	vs, err := mgr(h.nt, 0).Log(h.id, n+10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(vs)) != want {
		t.Fatalf("log holds %d events, want %d", len(vs), want)
	}
	for k, v := range vs[5:] {
		if v.Seq != seq+1+uint64(k) || v.Depth != h.head.Depth+1+uint64(k) {
			t.Fatalf("event %d of the chain: seq %d depth %d", k, v.Seq, v.Depth)
		}
	}
	// The room's heads follow the chain: a new post comes after its tip.
	say(t, h.nt, 0, h.id, "after the chain")
	vs, err = mgr(h.nt, 0).Log(h.id, 1, nil)
	if err != nil || len(vs) != 1 || vs[0].Depth != depth+1 {
		t.Fatalf("the post after the chain: %+v, %v; want depth %d", vs, err, depth+1)
	}
}
