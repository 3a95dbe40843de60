package testnet

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Results is the outcome of a run.
type Results struct {
	Started   time.Time        `json:"started"`
	Elapsed   float64          `json:"elapsed_s"`
	Config    ConfigSummary    `json:"config"`
	Machine   Machine          `json:"machine"`
	Scenarios []ScenarioResult `json:"scenarios"`
	Baseline  *Baseline        `json:"baseline,omitempty"`
	// Rounds are a -repeat run's rounds, the first being Baseline, and
	// RoundSummary their spread.
	Rounds       []*Baseline   `json:"rounds,omitempty"`
	RoundSummary *RoundSummary `json:"round_summary,omitempty"`
	// OK is true when no scenario lost a message, diverged in order, left
	// its nodes holding different events, had a Say fail, grew in live heap or goroutines (soak) or failed.
	OK       bool     `json:"ok"`
	Failures []string `json:"failures,omitempty"`
}

// ConfigSummary is the configuration a run used.
type ConfigSummary struct {
	Nodes     int      `json:"nodes"`
	Scenarios []string `json:"scenarios"`
	Rate      int      `json:"rate_per_s"`
	Size      int      `json:"size_bytes"`
	Duration  float64  `json:"duration_s"`
	Mode      Mode     `json:"mode"`
	Delay     float64  `json:"delay_ms,omitempty"`
	Loss      float64  `json:"loss_percent,omitempty"`
	CatchUp   int      `json:"catchup_events"`
	BigRoom   int      `json:"bigroom_events"`
	Burst     int      `json:"burst_messages"`
	Baseline  bool     `json:"baseline"`
	// Repeat is the rounds of a -repeat run (omitted for one).
	Repeat int `json:"repeat,omitempty"`
	// Scale is the numbers of nodes the scale scenario measures.
	Scale []int `json:"scale_nodes,omitempty"`
	// SyncInterval is the rooms' anti-entropy period (in-process nodes;
	// processes use the node default, 30 s), and ScaleSyncInterval the
	// scale scenario's (the node default unless -sync was given).
	SyncInterval      float64 `json:"sync_interval_s"`
	ScaleSyncInterval float64 `json:"scale_sync_interval_s,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	Procs     int    `json:"gomaxprocs"` // Go Ps (runtime.GOMAXPROCS)
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// LoadAvg is the machine's load average over 1, 5 and 15 minutes when
	// the run started (Linux), before any burner.
	LoadAvg []float64 `json:"load_avg,omitempty"`
	// Burn is the number of CPUs kept busy by other processes during the
	// run (cmd-testnet -burn).
	Burn int `json:"burn,omitempty"`
}

// ScenarioResult is one scenario's figures.
type ScenarioResult struct {
	Name  string `json:"name"`
	Nodes int    `json:"nodes"`
	// Sent is the number of messages said; Expected the deliveries that
	// should follow (each message on every node but its sender's), and
	// Delivered the ones found in the nodes' logs at the end.
	Sent          int     `json:"sent"`
	Expected      int     `json:"expected_deliveries"`
	Delivered     int     `json:"delivered"`
	DeliveryRatio float64 `json:"delivery_ratio"`
	// SaysFailed is how many of the scenario's Say calls returned an
	// error. Their messages are left out of Sent and Expected, so a
	// delivery ratio of 1 says nothing of them: any fails the run, since
	// in every scenario the node that says stays up and within the
	// testnet's reach (see sendStats).
	SaysFailed int `json:"says_failed"`
	// OrderChecked is false when the scenario has no room log to compare
	// (discovery); OrderIdentical then stays true.
	OrderChecked   bool `json:"order_checked"`
	OrderIdentical bool `json:"order_identical"`
	// Latency of each delivery, from the Say call on the sender to the
	// event stored and visible on the receiver (for discovery: of each DHT
	// lookup).
	Latency *Latency `json:"latency,omitempty"`
	// Converge is the time from the end of the disturbance (heal, last
	// restart, end of the burst) until every node shows the same log.
	ConvergeMs float64 `json:"converge_ms,omitempty"`
	// Unconverged is why the scenario's last wait for every node to hold
	// the same events ran out (empty: they did). It fails the scenario
	// even when every recorded message was delivered: the nodes hold
	// different logs (a node lacks another's hello, say, which no
	// delivery counts).
	Unconverged string `json:"unconverged,omitempty"`
	// Stages breaks the deliveries' latency down by stage (fanout,
	// in-process nodes).
	Stages *Stages `json:"stages,omitempty"`
	// Hops is where the time goes inside GossipSub (fanout and the raw
	// GossipSub baselines, in-process nodes).
	Hops *Hops `json:"hops,omitempty"`
	// Scale is the scale scenario's table by N.
	Scale *ScaleResult `json:"scale,omitempty"`
	// Soak is the soak scenario's samples and slopes.
	Soak     *SoakResult `json:"soak,omitempty"`
	ElapsedS float64     `json:"elapsed_s"`
	// Metrics are the scenario's own figures, named with their unit.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Notes   []string           `json:"notes,omitempty"`
	Skipped string             `json:"skipped,omitempty"`
	Error   string             `json:"error,omitempty"`

	samples []time.Duration // for the chart
	sayErr  string          // the first failed Say's error
}

// failed returns why the scenario failed, or "".
func (s *ScenarioResult) failed() string {
	switch {
	case s.Skipped != "":
		return ""
	case s.Error != "":
		return fmt.Sprintf("%s: %s", s.Name, s.Error)
	case s.OrderChecked && s.Expected == 0:
		// A ratio of 1 over nothing: no message was said, or no node was
		// there to receive it. Nothing was checked.
		return fmt.Sprintf("%s: no delivery was expected (%d messages said): nothing was checked", s.Name, s.Sent)
	case s.DeliveryRatio < 1:
		return fmt.Sprintf("%s: messages lost or late: %d of %d deliveries made by the end of the drain (ratio %.4f)", s.Name, s.Delivered, s.Expected, s.DeliveryRatio)
	case s.OrderChecked && !s.OrderIdentical:
		return fmt.Sprintf("%s: nodes show different orders", s.Name)
	case s.Unconverged != "":
		return fmt.Sprintf("%s: the nodes did not come to hold the same events: %s", s.Name, s.Unconverged)
	case s.SaysFailed > 0:
		return fmt.Sprintf("%s: %d says failed (first: %s)", s.Name, s.SaysFailed, s.sayErr)
	case s.Soak != nil && !s.Soak.decisiveFlat():
		return fmt.Sprintf("%s: %s", s.Name, s.Soak.growth())
	}
	return ""
}

// Latency summarises a latency distribution, in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	Min   float64 `json:"min_ms"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
}

// summarize computes a Latency from samples (which it sorts); nil if empty.
func summarize(ds []time.Duration) *Latency {
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	var sum float64
	for _, d := range ds {
		sum += ms(d)
	}
	return &Latency{
		Count: len(ds),
		Min:   ms(ds[0]),
		Mean:  round3(sum / float64(len(ds))),
		P50:   ms(quantile(ds, 0.50)),
		P90:   ms(quantile(ds, 0.90)),
		P95:   ms(quantile(ds, 0.95)),
		P99:   ms(quantile(ds, 0.99)),
		P999:  ms(quantile(ds, 0.999)),
		Max:   ms(ds[len(ds)-1]),
	}
}

// quantile of sorted samples, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// Baseline compares Parley's fanout with the same workload on raw
// GossipSub (twice: GossipSub's defaults, and publishing through the
// mesh as Parley does) and NATS.
type Baseline struct {
	Workload  string          `json:"workload"`
	Parley    *ScenarioResult `json:"parley,omitempty"`
	GossipSub *ScenarioResult `json:"gossipsub"`
	// GossipSubMesh is raw GossipSub publishing as Parley does: flood
	// publishing off, Parley's mesh size, the publisher in the topic's
	// mesh.
	GossipSubMesh *ScenarioResult `json:"gossipsub_mesh,omitempty"`
	NATS          *ScenarioResult `json:"nats"`
	// Ratios are Parley's latency percentiles divided by the others'.
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// Targets are the project's targets and whether they are met.
	Targets map[string]bool `json:"targets,omitempty"`
}
