package testnet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRunWhereEveryScenarioWasSkippedFails: a run that checked nothing
// (every scenario it was asked for cannot run in its mode) is no pass.
func TestRunWhereEveryScenarioWasSkippedFails(t *testing.T) {
	res, err := Run(context.Background(), Config{Mode: Mocknet, Scenarios: []string{"restart"}, Duration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scenarios) != 1 || res.Scenarios[0].Skipped == "" {
		t.Fatalf("scenarios %+v", res.Scenarios)
	}
	if res.OK || len(res.Failures) == 0 {
		t.Errorf("nothing ran, yet OK %v, failures %q", res.OK, res.Failures)
	}
}

// TestNoExpectedDeliveriesFailsTheScenario: a room scenario that expected
// no delivery at all checked nothing; its ratio of 1 must not pass it.
func TestNoExpectedDeliveriesFailsTheScenario(t *testing.T) {
	res := ScenarioResult{Name: "fanout", DeliveryRatio: 1, OrderChecked: true, OrderIdentical: true}
	if why := res.failed(); why == "" {
		t.Errorf("0 sent, 0 expected: passed")
	}
	res = ScenarioResult{Name: "discovery", Sent: 4, Expected: 4, Delivered: 4, DeliveryRatio: 1, OrderIdentical: true}
	if why := res.failed(); why != "" {
		t.Errorf("discovery without a room log: %q", why)
	}
}

// TestScaleFitNeedsTwoSizes: a line through one N predicts nothing for
// 1,000 nodes, and a per-peer line needs peer counts that vary.
func TestScaleFitNeedsTwoSizes(t *testing.T) {
	rows := []ScaleRow{
		{Nodes: 10, Idle: ScaleCost{RSSMiB: 100, PeersPerNode: 9}},
		{Nodes: 10, Idle: ScaleCost{RSSMiB: 110, PeersPerNode: 9}},
	}
	if fits := scaleFits(rows); len(fits) != 0 {
		t.Errorf("fits from one N: %+v", fits)
	}
	rows = []ScaleRow{
		{Nodes: 10, Idle: ScaleCost{RSSMiB: 100}},
		{Nodes: 20, Idle: ScaleCost{RSSMiB: 200}},
	}
	for _, f := range scaleFits(rows) {
		if f.ConnCap != 0 || f.PerNodeAtCap != 0 {
			t.Errorf("%s: a per-peer line from peers that never varied: %+v", f.Figure, f)
		}
	}
}

// TestPollSaysInterrupted: a wait cut short by the run's end (SIGINT,
// SIGTERM) says so, not that what it awaited never came.
func TestPollSaysInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := poll(ctx, time.Minute, func() bool { return false }, "every node")
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "timed out") {
		t.Errorf("interrupted wait: %v", err)
	}
	err = poll(context.Background(), 10*time.Millisecond, func() bool { return false }, "every node")
	if err == nil || !strings.Contains(err.Error(), "timed out after 10ms waiting for every node") {
		t.Errorf("timed-out wait: %v", err)
	}
}

// TestRatiosNeedEveryDelivery: a system that lost deliveries has
// percentiles over the ones that came; Parley's ratio to them, and the
// targets set against them, would compare unlike sets.
func TestRatiosNeedEveryDelivery(t *testing.T) {
	full := func(name string, p50, p99 float64) *ScenarioResult {
		return &ScenarioResult{Name: name, Sent: 10, Expected: 50, Delivered: 50, DeliveryRatio: 1,
			Latency: &Latency{Count: 50, P50: p50, P99: p99}, Metrics: map[string]float64{"cpu_us_per_delivery": 100}}
	}
	b := &Baseline{Parley: full("fanout", 2, 8), GossipSub: full("gossipsub", 1, 4), GossipSubMesh: full("gossipsub-mesh", 1, 4), NATS: full("nats", 0.5, 1)}
	b.compare(0, 2)
	if b.Ratios["p50_vs_gossipsub"] != 2 || b.Ratios["cpu_per_delivery_vs_gossipsub"] != 1 || len(b.Targets) != 3 {
		t.Fatalf("every delivery made: ratios %v, targets %v", b.Ratios, b.Targets)
	}
	lossy := full("gossipsub", 1, 4)
	lossy.Delivered, lossy.DeliveryRatio = 40, 0.8
	b = &Baseline{Parley: full("fanout", 2, 8), GossipSub: lossy, GossipSubMesh: full("gossipsub-mesh", 1, 4), NATS: full("nats", 0.5, 1)}
	b.compare(0, 2)
	for _, k := range []string{"p50_vs_gossipsub", "p99_vs_gossipsub", "cpu_per_delivery_vs_gossipsub"} {
		if v, ok := b.Ratios[k]; ok {
			t.Errorf("gossipsub lost 10 of 50, yet %s = %v", k, v)
		}
	}
	if _, ok := b.Targets["p50 <= 1.5x gossipsub"]; ok {
		t.Errorf("a target against a lossy gossipsub: %v", b.Targets)
	}
	if b.Ratios["p50_vs_nats"] != 4 {
		t.Errorf("NATS lost nothing: ratios %v", b.Ratios)
	}
}

// TestShortRateIsSaid: a run that could not say messages at the rate it
// was asked for says so; its figures are of a lighter load.
func TestShortRateIsSaid(t *testing.T) {
	if n := shortRate(100, 60.2); !strings.Contains(n, "60.2") || !strings.Contains(n, "100") {
		t.Errorf("60.2 of 100 msg/s: %q", n)
	}
	if n := shortRate(100, 96); n != "" {
		t.Errorf("96 of 100 msg/s: %q", n)
	}
}
