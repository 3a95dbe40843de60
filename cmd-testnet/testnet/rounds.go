package testnet

import (
	"context"
	"fmt"
	"slices"
)

// RoundSummary sums up the rounds of a -repeat run: the spread of each
// system's figures and of each ratio over the rounds, and in how many
// rounds each target was met.
type RoundSummary struct {
	Rounds int `json:"rounds"`
	// Figures are keyed system_figure: parley_p50_ms, gossipsub_p99_ms,
	// gossipsub_mesh_cpu_us_per_delivery, ...
	Figures    map[string]Spread `json:"figures"`
	Ratios     map[string]Spread `json:"ratios"`
	TargetsMet map[string]int    `json:"targets_met"`
}

// Spread is the lowest, median and highest of a figure over rounds.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	// N is how many rounds had the figure.
	N int `json:"n"`
}

// rounds runs rounds 2 to cfg.Repeat of a -repeat run: each runs Parley's
// fanout, then its baselines, like the first round (res.Baseline). A round
// that loses a message or shows two orders is a failure of the run.
func (r *runner) rounds(ctx context.Context, res *Results) error {
	res.Rounds = []*Baseline{res.Baseline}
	defer func() { res.RoundSummary = summarizeRounds(res.Rounds) }()
	for k := 2; k <= r.cfg.Repeat; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.p.scenario(fmt.Sprintf("round %d/%d: fanout", k, r.cfg.Repeat))
		sr, err := r.timedScenario(ctx, "fanout")
		if err != nil {
			return fmt.Errorf("round %d: fanout: %w", k, err)
		}
		r.p.printf("%s", summaryLine(&sr))
		if why := sr.failed(); why != "" {
			res.Failures = append(res.Failures, fmt.Sprintf("round %d: %s", k, why))
		}
		r.p.scenario(fmt.Sprintf("round %d/%d: baseline", k, r.cfg.Repeat))
		b, err := r.baseline(ctx, &sr)
		if err != nil {
			return fmt.Errorf("round %d: baseline: %w", k, err)
		}
		res.Rounds = append(res.Rounds, b)
	}
	r.p.scenario("")
	return nil
}

// summarizeRounds gives the spread of the rounds' figures, ratios and targets.
func summarizeRounds(rounds []*Baseline) *RoundSummary {
	figures := map[string][]float64{}
	ratios := map[string][]float64{}
	sum := &RoundSummary{Rounds: len(rounds), TargetsMet: map[string]int{}}
	for _, b := range rounds {
		if b == nil {
			continue
		}
		for _, sys := range []struct {
			name string
			s    *ScenarioResult
		}{{"parley", b.Parley}, {"gossipsub", b.GossipSub}, {"gossipsub_mesh", b.GossipSubMesh}, {"nats", b.NATS}} {
			if sys.s == nil {
				continue
			}
			// As for the ratios: percentiles over fewer deliveries
			// than the workload's, or CPU over fewer deliveries
			// made, are not the round's figure.
			if l := sys.s.Latency; l != nil && sys.s.Incomparable() == "" {
				figures[sys.name+"_p50_ms"] = append(figures[sys.name+"_p50_ms"], l.P50)
				figures[sys.name+"_p99_ms"] = append(figures[sys.name+"_p99_ms"], l.P99)
			}
			if v, ok := sys.s.Metrics["cpu_us_per_delivery"]; ok && sys.s.Expected > 0 && sys.s.Delivered == sys.s.Expected {
				figures[sys.name+"_cpu_us_per_delivery"] = append(figures[sys.name+"_cpu_us_per_delivery"], v)
			}
		}
		for k, v := range b.Ratios {
			ratios[k] = append(ratios[k], v)
		}
		for k, met := range b.Targets {
			if met {
				sum.TargetsMet[k]++
			} else if _, ok := sum.TargetsMet[k]; !ok {
				sum.TargetsMet[k] = 0
			}
		}
	}
	sum.Figures, sum.Ratios = spreads(figures), spreads(ratios)
	return sum
}

func spreads(m map[string][]float64) map[string]Spread {
	out := make(map[string]Spread, len(m))
	for k, vs := range m {
		out[k] = spreadOf(vs)
	}
	return out
}

// spreadOf gives the lowest, median (the mean of the middle two for an
// even count) and highest of vs, which must not be empty.
func spreadOf(vs []float64) Spread {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{Min: s[0], Median: round3(med), Max: s[n-1], N: n}
}
