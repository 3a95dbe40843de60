package testnet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRatiosNeedEveryLatency: Parley's deliveries are counted from the
// nodes' logs, its latencies from live subscriptions. A subscription the
// room cut off (its buffer full) misses the rest of its deliveries, so
// the percentiles would be over a subset (the slowest node's tail left
// out) though every delivery was made: no ratio or target is set on them.
func TestRatiosNeedEveryLatency(t *testing.T) {
	sys := func(name string, count int, p50, p99 float64) *ScenarioResult {
		return &ScenarioResult{Name: name, Sent: 10, Expected: 50, Delivered: 50, DeliveryRatio: 1,
			Latency: &Latency{Count: count, P50: p50, P99: p99}, Metrics: map[string]float64{"cpu_us_per_delivery": 100}}
	}
	b := &Baseline{Parley: sys("fanout", 40, 1, 2), GossipSub: sys("gossipsub", 50, 1, 4), GossipSubMesh: sys("gossipsub-mesh", 50, 1, 4), NATS: sys("nats", 50, 0.5, 1)}
	b.compare(0, 2)
	for k, v := range b.Ratios {
		if strings.HasPrefix(k, "p50_") || strings.HasPrefix(k, "p99_") {
			t.Errorf("Parley's latency covers 40 of 50 deliveries, yet %s = %v", k, v)
		}
	}
	if len(b.Targets) != 0 {
		t.Errorf("targets set on 40 of 50 latencies: %v", b.Targets)
	}
	if b.Ratios["cpu_per_delivery_vs_gossipsub"] != 1 {
		t.Errorf("CPU per delivery counts the logs' deliveries, all made: ratios %v", b.Ratios)
	}
	if why := b.Parley.Incomparable(); !strings.Contains(why, "40 of") {
		t.Errorf("Incomparable() = %q", why)
	}
	b = &Baseline{Parley: sys("fanout", 50, 1, 2), GossipSub: sys("gossipsub", 49, 1, 4)}
	b.compare(0, 2)
	if _, ok := b.Ratios["p50_vs_gossipsub"]; ok {
		t.Errorf("a ratio against 49 of gossipsub's 50 latencies: %v", b.Ratios)
	}
}

// TestLatencyOverSomeDeliveriesIsSaid: a recorder whose subscriptions saw
// fewer deliveries than the logs hold notes it beside its percentiles.
func TestLatencyOverSomeDeliveriesIsSaid(t *testing.T) {
	rec := newRecorder(4, 3)
	for i := range 4 {
		rec.said(i, 0)
	}
	at := time.Now()
	for i := range 4 {
		rec.deliver(1, msgText(i, 10), at)
	}
	rec.deliver(2, msgText(0, 10), at) // node 2's subscription was cut off
	res := ScenarioResult{Sent: 4, Expected: 8, Delivered: 8, DeliveryRatio: 1}
	latencyResult(&res, rec)
	if res.Latency == nil || res.Latency.Count != 5 {
		t.Fatalf("latency %+v", res.Latency)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "5 of the 8 deliveries") {
		t.Errorf("notes %q", res.Notes)
	}
}

// logsCluster is a cluster whose nodes' logs are given; check reads only
// them.
type logsCluster struct {
	cluster
	logs [][]entry
}

func (c logsCluster) Len() int { return len(c.logs) }

func (c logsCluster) Log(_ context.Context, i int, _ string) ([]entry, error) {
	return c.logs[i], nil
}

// checked runs check over logs for messages 0..n-1 said by node 0.
func checked(t *testing.T, n int, logs [][]entry) ScenarioResult {
	t.Helper()
	rec := newRecorder(n, len(logs))
	for k := range n {
		rec.said(k, 0)
	}
	res := ScenarioResult{Name: "fanout", OrderIdentical: true}
	r := &runner{p: newProgress(nil)}
	if err := r.check(context.Background(), logsCluster{logs: logs}, "room", rec, all(len(logs)), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCheckCatchesLossAndReorder injects a loss or a reorder into the logs
// the check reads: each fails the scenario, and so does a node that holds
// nothing or holds one message twice instead of another.
func TestCheckCatchesLossAndReorder(t *testing.T) {
	msg := func(k int) entry {
		return entry{ID: fmt.Sprintf("e%d", k), Text: msgText(k, 16), Author: "n0", Seq: uint64(k + 1)}
	}
	other := func(id string) entry { return entry{ID: id, Text: "hello " + id, Author: "n" + id} }
	full := func() []entry { return []entry{other("h"), msg(0), msg(1), msg(2), msg(3)} }
	for _, tc := range []struct {
		name string
		logs [][]entry
		want string // in failed(); "" for a pass
	}{
		{"same logs", [][]entry{full(), full(), full()}, ""},
		{"a message lost", [][]entry{full(), full(), {other("h"), msg(0), msg(2), msg(3)}}, "lost"},
		{"two messages swapped", [][]entry{full(), full(), {other("h"), msg(0), msg(2), msg(1), msg(3)}}, "different orders"},
		{"a node that holds nothing", [][]entry{full(), full(), nil}, "lost"},
		{"a message twice, another missing", [][]entry{full(), full(), {other("h"), msg(0), msg(1), msg(1), msg(3)}}, "lost"},
		// Node 0 lacks two events of others (not the testnet's messages,
		// so no delivery counts them); nodes 1 and 2 hold them in
		// different orders. Compared with node 0 alone, each agrees
		// with it where they overlap.
		{"orders differ on events node 0 lacks", [][]entry{
			full(),
			append(full(), other("x"), other("y")),
			append(full(), other("y"), other("x")),
		}, "different orders"},
	} {
		res := checked(t, 4, tc.logs)
		res.OrderChecked = true
		why := res.failed()
		switch {
		case tc.want == "" && why != "":
			t.Errorf("%s: failed: %s", tc.name, why)
		case tc.want != "" && !strings.Contains(why, tc.want):
			t.Errorf("%s: failed() = %q, want it to say %q (delivered %d/%d, order identical %v)", tc.name, why, tc.want, res.Delivered, res.Expected, res.OrderIdentical)
		}
	}
}

// TestBaselineShortRateIsSaid: a baseline whose publisher could not keep
// the rate notes it, as Parley's fanout does; its figures are of a
// lighter load than Parley's.
func TestBaselineShortRateIsSaid(t *testing.T) {
	const receivers = 2
	r := &runner{cfg: Config{Rate: 100, Duration: 200 * time.Millisecond}, p: newProgress(nil)}
	for _, slow := range []bool{false, true} {
		p := newProbe(r.cfg.messages(), receivers)
		pub := func(seq uint64) error {
			if slow && seq != warmupSeq {
				// A publisher that takes 30 ms a message: a third
				// of the rate.
				for t0 := time.Now(); time.Since(t0) < 30*time.Millisecond; {
				}
			}
			data := p.payload(seq, 16)
			for i := range receivers {
				p.got(i, data)
			}
			return nil
		}
		var res ScenarioResult
		if err := r.probeRun(context.Background(), p, 0, pub, &res); err != nil {
			t.Fatal(err)
		}
		note := strings.Join(res.Notes, "\n")
		rate := res.Metrics["achieved_rate_per_s"]
		if slow && (rate > 50 || !strings.Contains(note, "lighter load")) {
			t.Errorf("slow publisher: rate %v, notes %q", rate, note)
		}
		if !slow && rate < 50 {
			t.Errorf("publisher at the rate: rate %v, notes %q", rate, note)
		}
		if res.Delivered != res.Expected || res.Expected != 40 {
			t.Errorf("slow %v: delivered %d of %d", slow, res.Delivered, res.Expected)
		}
	}
}

// TestPercentileEdges: nearest-rank percentiles of known samples, of one
// sample and of none, exact (summarize) and within 2 % above (histogram).
func TestPercentileEdges(t *testing.T) {
	msd := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	if l := summarize(msd(7)); l.Count != 1 || l.P50 != 7 || l.P99 != 7 || l.P999 != 7 || l.Min != 7 || l.Max != 7 || l.Mean != 7 {
		t.Errorf("one sample: %+v", l)
	}
	if l := summarize(msd(10, 1, 9, 2, 8, 3, 7, 4, 6, 5)); l.P50 != 5 || l.P90 != 9 || l.P95 != 10 || l.P99 != 10 || l.Min != 1 || l.Max != 10 {
		t.Errorf("1..10: %+v", l)
	}
	if l := summarize(msd(1, 1000)); l.P50 != 1 || l.P99 != 1000 {
		t.Errorf("two samples: %+v", l)
	}
	if summarize(nil) != nil || summarize([]time.Duration{}) != nil || quantile(nil, 0.5) != 0 {
		t.Error("no samples")
	}
	h := newHistogram()
	h.add(7 * time.Millisecond)
	if l := h.summary(); l.Count != 1 || l.P50 != 7 || l.P99 != 7 || l.Max != 7 {
		t.Errorf("histogram, one sample: %+v", l)
	}
	h = newHistogram()
	for _, d := range msd(10, 1, 9, 2, 8, 3, 7, 4, 6, 5) {
		h.add(d)
	}
	l := h.summary()
	for _, c := range []struct{ got, want float64 }{{l.P50, 5}, {l.P90, 9}, {l.P99, 10}} {
		if c.got < c.want || c.got > c.want*1.021 {
			t.Errorf("histogram 1..10: %v, want %v within 2 %% above", c.got, c.want)
		}
	}
}

// TestUnconvergedNodesFailTheScenario: the last wait for every node to
// hold the same events timed out, though each receiver holds every
// recorded message (a node lacks another's hello, which no delivery
// counts): the nodes do not hold one log, and the scenario fails.
func TestUnconvergedNodesFailTheScenario(t *testing.T) {
	msg := func(k int) entry {
		return entry{ID: fmt.Sprintf("e%d", k), Text: msgText(k, 16), Author: "n0", Seq: uint64(k + 1)}
	}
	hello := entry{ID: "h1", Text: "hello 1 from node 1", Author: "n1", Seq: 1}
	full := []entry{hello, msg(0), msg(1)}
	logs := [][]entry{full, full, {msg(0), msg(1)}}
	rec := newRecorder(2, len(logs))
	rec.said(0, 0)
	rec.said(1, 0)
	r := &runner{p: newProgress(nil)}
	cerr := errors.New("timed out after 30s waiting for the same 5+ events on nodes [0 1 2]; node 2 lacks 1 events: node 1's seqs 1")
	res, err := r.finish(context.Background(), logsCluster{logs: logs}, "room", rec, all(len(logs)), ScenarioResult{Name: "partition", OrderIdentical: true}, cerr)
	if err != nil {
		t.Fatal(err)
	}
	if why := res.failed(); !strings.Contains(why, "node 2 lacks 1 events") {
		t.Errorf("delivered %d/%d, failed() = %q", res.Delivered, res.Expected, why)
	}
	res, _ = r.finish(context.Background(), logsCluster{logs: [][]entry{full, full, full}}, "room", rec, all(3), ScenarioResult{Name: "partition", OrderIdentical: true}, nil)
	if why := res.failed(); why != "" {
		t.Errorf("converged: failed() = %q", why)
	}
}

// TestRoundFiguresLeaveOutPartialRounds: a round in which a system lost
// or did not time deliveries gives no figure to the median over rounds
// (its percentiles are of fewer deliveries than the workload's).
func TestRoundFiguresLeaveOutPartialRounds(t *testing.T) {
	sys := func(name string, delivered, timed int, p50 float64) *ScenarioResult {
		return &ScenarioResult{Name: name, Sent: 10, Expected: 50, Delivered: delivered, DeliveryRatio: float64(delivered) / 50,
			Latency: &Latency{Count: timed, P50: p50, P99: 2 * p50}, Metrics: map[string]float64{"cpu_us_per_delivery": 100}}
	}
	rounds := []*Baseline{
		{Parley: sys("fanout", 50, 50, 2), GossipSub: sys("gossipsub", 50, 50, 1)},
		{Parley: sys("fanout", 50, 30, 1), GossipSub: sys("gossipsub", 40, 40, 0.1)},
		{Parley: sys("fanout", 50, 50, 3), GossipSub: sys("gossipsub", 50, 50, 1)},
	}
	sum := summarizeRounds(rounds)
	if f := sum.Figures["parley_p50_ms"]; f.N != 2 || f.Min != 2 {
		t.Errorf("parley p50 over rounds: %+v", f)
	}
	if f := sum.Figures["gossipsub_p50_ms"]; f.N != 2 || f.Min != 1 {
		t.Errorf("gossipsub p50 over rounds: %+v", f)
	}
	if f := sum.Figures["gossipsub_cpu_us_per_delivery"]; f.N != 2 {
		t.Errorf("gossipsub CPU over rounds: %+v", f)
	}
	if f := sum.Figures["parley_cpu_us_per_delivery"]; f.N != 3 {
		t.Errorf("parley CPU over rounds (every delivery made in each): %+v", f)
	}
}
