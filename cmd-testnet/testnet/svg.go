package testnet

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// WriteSVG draws the latency distributions of a run as cumulative curves:
// latency on a log scale across, and the share of deliveries within it up,
// on a scale that stretches the tail (50%, 90%, 99%, 99.9% equally apart).
// One curve per scenario with latencies, and the baselines. It uses only the
// standard library.
func WriteSVG(w io.Writer, res Results) error {
	type curve struct {
		name    string
		samples []time.Duration
		lat     *Latency
	}
	var curves []curve
	for _, s := range res.Scenarios {
		if len(s.samples) > 0 {
			name := s.Name
			if s.Name == "discovery" {
				name = "discovery (DHT walk)"
			}
			curves = append(curves, curve{name, s.samples, s.Latency})
		}
	}
	if b := res.Baseline; b != nil {
		for _, s := range []*ScenarioResult{b.GossipSub, b.GossipSubMesh, b.NATS} {
			if s != nil && len(s.samples) > 0 {
				curves = append(curves, curve{"baseline " + s.Name, s.samples, s.Latency})
			}
		}
	}
	const (
		width, height           = 1020, 540
		left, right, top, under = 70, 330, 50, 60
		tail                    = 4.0 // the top of the y scale: 99.99%
	)
	pw, ph := float64(width-left-right), float64(height-top-under)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range curves {
		for _, d := range c.samples {
			v := math.Max(float64(d)/float64(time.Millisecond), 0.001)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if len(curves) == 0 {
		lo, hi = 0.1, 1000
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	x := func(v float64) float64 {
		v = math.Max(v, lo)
		return float64(left) + pw*(math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
	}
	// y stretches the tail: -log10(1-q), so 90% is 1, 99% is 2 …
	y := func(q float64) float64 {
		t := tail
		if q < 1 {
			t = math.Min(-math.Log10(1-q), tail)
		}
		return float64(top) + ph*(1-t/tail)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	title := fmt.Sprintf("Parley testnet: latency distribution (%d nodes, %s, %d msg/s, %d B)", res.Config.Nodes, res.Config.Mode, res.Config.Rate, res.Config.Size)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// Grid and axes.
	for p := math.Log10(lo); p <= math.Log10(hi)+1e-9; p++ {
		v := math.Pow(10, p)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(v), top, x(v), height-under)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(v), height-under+18, fmtMs(v))
	}
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 0.9999} {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(q), width-right, y(q))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%g%%</text>`+"\n", left-6, y(q)+4, q*100)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">latency (ms, log scale): Say on the sender → stored and visible on a receiver</text>`+"\n", float64(left)+pw/2, height-under+40)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">share of deliveries within</text>`+"\n", float64(top)+ph/2, float64(top)+ph/2)

	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f", "#e377c2"}
	for k, c := range curves {
		color := colors[k%len(colors)]
		s := slices.Clone(c.samples)
		slices.Sort(s)
		// The body in at most 400 steps, the last 1% sample by sample (at
		// most 400 of them), so that the tail keeps its detail.
		tailStart := max(len(s)-max(len(s)/100, 1), len(s)-400, 0)
		step := max(1, tailStart/400)
		var path strings.Builder
		for i := 0; i < len(s); {
			q := float64(i) / float64(len(s))
			v := float64(s[i]) / float64(time.Millisecond)
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f,%.1f ", cmd, x(v), y(q))
			if i < tailStart {
				i = min(i+step, tailStart)
			} else {
				i++
			}
		}
		fmt.Fprintf(&path, "L%.1f,%.1f", x(float64(s[len(s)-1])/float64(time.Millisecond)), y(1))
		dash := ""
		if strings.HasPrefix(c.name, "baseline") {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", path.String(), color, dash)
		ly := top + 10 + k*36
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`+"\n", width-right+15, ly, width-right+40, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", width-right+46, ly+4, html.EscapeString(c.name))
		if c.lat != nil {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">p50 %s  p99 %s  (n=%d)</text>`+"\n", width-right+46, ly+18, fmtMs(c.lat.P50), fmtMs(c.lat.P99), c.lat.Count)
		}
	}
	if len(curves) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">no latency samples</text>`+"\n", float64(left)+pw/2, float64(top)+ph/2)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtMs(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%gs", math.Round(v/10)/100)
	case v >= 1:
		return fmt.Sprintf("%gms", math.Round(v*100)/100)
	default:
		return fmt.Sprintf("%gms", math.Round(v*1000)/1000)
	}
}
