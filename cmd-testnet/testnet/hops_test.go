package testnet

import (
	"reflect"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/rooms"
)

// TestHopBreakdown feeds a hop log by hand: a raw GossipSub message that
// one receiver gets from the publisher and another through it, one that a
// receiver takes in but never delivers, and a Parley event, found by its
// ID for its published and visible stages.
func TestHopBreakdown(t *testing.T) {
	l := newHopLog()
	p := []peer.ID{"p0", "p1", "p2", "p3"}
	l.setPeers(p)
	if l.breakdown() != nil {
		t.Fatal("a breakdown of nothing")
	}
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l.published([]byte("a"), at(0)) // off: dropped
	l.start(0)
	a, b := []byte("a"), []byte("b")
	l.published(a, at(0))
	l.queue(1, a, at(0)) // a relay's (a copy back): not the publisher's
	l.queue(0, a, at(1))
	l.queue(0, a, at(5)) // to another peer: the first counts
	l.recv(1, p[0], a, at(3))
	l.recv(1, p[2], a, at(7)) // a second copy
	l.deliver(1, "a-id", a, at(4))
	l.recv(2, p[1], a, at(6)) // relayed by node 1
	l.deliver(2, "a-id", a, at(8))
	l.recv(3, p[0], a, at(2)) // taken in, never delivered
	l.recv(0, p[1], a, at(9)) // the publisher's own, back
	l.deliver(0, "a-id", a, at(9))

	id := rooms.ID{7}
	l.stage(0, id, rooms.StagePublished, at(0))
	l.stage(1, id, rooms.StageValidated, at(2)) // not a stage the log keeps
	l.queue(0, b, at(1))
	l.recv(1, p[0], b, at(2))
	l.deliver(1, string(id[:]), b, at(3))
	l.stage(1, id, rooms.StageVisible, at(5))
	l.stop()
	l.recv(2, p[0], b, at(9)) // off: dropped by the tracer, so not here
	h := l.breakdown()
	if h == nil || h.Deliveries != 3 || h.Relayed != 1 {
		t.Fatalf("breakdown %+v", h)
	}
	check := func(name string, got *Latency, count int, min, max float64) {
		t.Helper()
		if got == nil || got.Count != count || got.Min != min || got.Max != max {
			t.Errorf("%s: %+v, want %d samples from %v to %v ms", name, got, count, min, max)
		}
	}
	check("queued", h.Queued, 2, 1, 1)
	check("wire", h.Wire, 2, 1, 2)
	check("relayed wire", h.RelayWire, 1, 2, 2)
	check("receive", h.Receive, 3, 1, 2)
	check("visible", h.Visible, 1, 2, 2)
}

// TestTargetsFollowTheLoad: a baseline run checks the targets of its load:
// the quiet ratios with no CPU busy, p50 within twice GossipSub's with
// some busy, p50 under 50 ms with all of them busy.
func TestTargetsFollowTheLoad(t *testing.T) {
	gs := &Latency{P50: 1.0, P99: 10}
	for _, c := range []struct {
		busy int
		p    Latency
		want map[string]bool
	}{
		{0, Latency{P50: 1.4, P99: 21}, map[string]bool{"p50 <= 1.5x gossipsub": true, "p99 <= 2x gossipsub": false, "p50 <= 2ms": true}},
		{0, Latency{P50: 1.6, P99: 19}, map[string]bool{"p50 <= 1.5x gossipsub": false, "p99 <= 2x gossipsub": true, "p50 <= 2ms": true}},
		{1, Latency{P50: 1.9, P99: 90}, map[string]bool{"p50 <= 2x gossipsub, CPUs busy": true, "p50 <= 2ms": true}},
		{1, Latency{P50: 2.1, P99: 9}, map[string]bool{"p50 <= 2x gossipsub, CPUs busy": false, "p50 <= 2ms": false}},
		{2, Latency{P50: 49, P99: 900}, map[string]bool{"p50 < 50ms, every CPU busy": true, "p50 <= 2ms": false}},
		{3, Latency{P50: 51, P99: 90}, map[string]bool{"p50 < 50ms, every CPU busy": false, "p50 <= 2ms": false}},
	} {
		if got := targets(c.busy, 2, &c.p, gs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%d busy, %+v: %v, want %v", c.busy, c.p, got, c.want)
		}
	}
	if got := targets(0, 2, &Latency{P50: 1}, nil); !reflect.DeepEqual(got, map[string]bool{"p50 <= 2ms": true}) {
		t.Errorf("without GossipSub's figures: %v", got)
	}
}
