package rooms

import (
	"context"
	"testing"
	"time"
)

// TestServePage: a responder sends what it was asked for, up to SyncLimit,
// and small pages while its room's inbox is over half full of live events.
func TestServePage(t *testing.T) {
	for _, tc := range []struct {
		asked, queued, capacity, want int
	}{
		{0, 0, 1024, SyncLimit},
		{100, 0, 1024, 100},
		{SyncLimit * 2, 0, 1024, SyncLimit},
		{0, 512, 1024, SyncLimit},
		{0, 513, 1024, busyPage},
		{100, 1024, 1024, 100},
		{SyncLimit, 1000, 1024, busyPage},
	} {
		if got := servePage(tc.asked, tc.queued, tc.capacity); got != tc.want {
			t.Errorf("servePage(%d, %d, %d) = %d, want %d", tc.asked, tc.queued, tc.capacity, got, tc.want)
		}
	}
}

// TestServeSlotsAtLeastTwo: a node has at least two serving slots, so
// that a peer, which holds one at most, never holds them all; half the
// CPUs past four.
func TestServeSlotsAtLeastTwo(t *testing.T) {
	for _, tc := range []struct{ procs, want int }{
		{1, 2}, {2, 2}, {3, 2}, {4, 2}, {6, 3}, {16, 8},
	} {
		if got := serveSlotsFor(tc.procs); got != tc.want {
			t.Errorf("serveSlotsFor(%d) = %d, want %d", tc.procs, got, tc.want)
		}
	}
	if n := serveSlots(); n < 2 {
		t.Errorf("serveSlots() = %d, want at least 2", n)
	}
}

// TestServeSlots: a node serves at most serveSlots() sync requests at once;
// another waits for a free slot and gives up when its deadline passes.
func TestServeSlots(t *testing.T) {
	n := serveSlots()
	if n < 2 {
		t.Fatalf("serveSlots() = %d", n)
	}
	s := make(slots, n)
	for range n {
		if !s.acquire(context.Background()) {
			t.Fatal("a free slot was refused")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if s.acquire(ctx) {
		t.Fatal("a slot beyond the limit was granted")
	}
	cancel()
	got := make(chan bool)
	go func() { got <- s.acquire(context.Background()) }()
	s.release()
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("the waiting request got no slot")
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiting request did not get the freed slot")
	}
}
