package testnet

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// SoakResult is what the soak scenario measured: the nodes' memory and
// goroutines sampled through a long steady load, and how they trend after
// the warm-up.
//
// Memory is judged twice. The live Go heap decides, with the goroutines: if
// either grows over the second half of the run, the run fails. Anonymous
// RSS, the memory the processes own (the Go heap with Badger's memtable
// arenas, stacks), is judged by the same rule and reported, and a run
// whose anonymous RSS grows says NOT FLAT, but does not fail for it: it
// follows the Go runtime's returning of freed pages to the system (the
// scavenger), which moves it by run more than the heap moves. The rest of
// RSS is file-backed: pages of files the processes map (Badger maps its
// value logs, tables and write-ahead logs; processes map their binary).
// Those are the kernel's page cache, clean once written back, dropped when
// memory is short and read again on use; they grow with the data written
// and read. Both are reported, with their slopes.
type SoakResult struct {
	Rooms     int     `json:"rooms"`
	RoomSize  int     `json:"room_size"`
	Rate      int     `json:"rate_per_s"` // in all, over every room
	DurationS float64 `json:"duration_s"`
	IntervalS float64 `json:"sample_interval_s"`
	// WarmupS is left out of the slopes: the first half of the run.
	WarmupS float64      `json:"warmup_s"`
	Samples []SoakSample `json:"samples"`
	// Slopes are per minute, through the samples after the warm-up:
	// least-squares lines for memory (it saw-tooths as memtables fill and
	// flush, and a line through the teeth is their trend), the median of
	// the slopes between pairs of samples (Theil–Sen) for goroutines
	// (their count steps up for a minute or two when a periodic task
	// opens streams, such as the DHT's refresh every 10 minutes, and a
	// step near either end of the span would tilt a least-squares line).
	// Means are those samples' means.
	RSSMiBPerMin     float64 `json:"rss_mib_per_min"`
	RSSAnonMiBPerMin float64 `json:"rss_anon_mib_per_min"`
	RSSFileMiBPerMin float64 `json:"rss_file_mib_per_min"`
	HeapMiBPerMin    float64 `json:"heap_mib_per_min"`
	GoroutinesPerMin float64 `json:"goroutines_per_min"`
	// The same fitted from the first 20 % of the run on, while the
	// caches are still filling: the warm-up shows as a larger slope here.
	RSSMiBPerMinFrom20     float64 `json:"rss_mib_per_min_from_20pct"`
	RSSAnonMiBPerMinFrom20 float64 `json:"rss_anon_mib_per_min_from_20pct"`
	HeapMiBPerMinFrom20    float64 `json:"heap_mib_per_min_from_20pct"`
	GoroutinesPerMinFrom20 float64 `json:"goroutines_per_min_from_20pct"`
	MeanRSSMiB             float64 `json:"mean_rss_mib"`
	MeanRSSAnonMiB         float64 `json:"mean_rss_anon_mib"`
	MeanHeapMiB            float64 `json:"mean_heap_mib"`
	MeanGoroutines         float64 `json:"mean_goroutines"`
	RSSGrowthShare         float64 `json:"rss_growth_share"`       // slope × span ÷ mean
	RSSAnonGrowthShare     float64 `json:"rss_anon_growth_share"`  // slope × span ÷ mean
	HeapGrowthShare        float64 `json:"heap_growth_share"`      // slope × span ÷ mean
	GoroutineGrowthShare   float64 `json:"goroutine_growth_share"` // slope × span ÷ mean
	// The verdicts of FlatRule: anonymous RSS, the live heap and the
	// goroutines each flat, and Flat when all three are. The run fails
	// when the live heap or the goroutines are not flat (or too few
	// samples came after the warm-up to tell); anonymous RSS alone that
	// is not flat makes Flat false, and is said, but passes.
	RSSAnonFlat    bool   `json:"rss_anon_flat"`
	HeapFlat       bool   `json:"heap_flat"`
	GoroutinesFlat bool   `json:"goroutines_flat"`
	Flat           bool   `json:"flat"`
	FlatRule       string `json:"flat_rule"`
	// SayLatency is how long the Say calls took.
	SayLatency *Latency `json:"say_latency,omitempty"`

	tooFew bool // too few samples after the warm-up to judge
}

// SoakSample is one sample of the nodes together (in-process: the process
// minus what it held before the nodes started).
type SoakSample struct {
	T          float64 `json:"t_s"` // since the load began
	RSSMiB     float64 `json:"rss_mib"`
	RSSAnonMiB float64 `json:"rss_anon_mib"`
	// RSSFileMiB is the file-backed rest of RSS (mapped files).
	RSSFileMiB float64 `json:"rss_file_mib"`
	HeapMiB    float64 `json:"heap_mib"`
	// HeapGoalMiB is the GC's heap goal (in-process): RSS climbs towards
	// it as garbage piles up between collections.
	HeapGoalMiB float64 `json:"heap_goal_mib,omitempty"`
	Goroutines  int     `json:"goroutines"`
	// CPU is CPU seconds per second since the sample before.
	CPU float64 `json:"cpu_s_per_s"`
	// Deliveries since the sample before, and their latency's p50 and
	// p99: when in the run the tail comes.
	Deliveries    int64   `json:"deliveries"`
	DeliveryP50Ms float64 `json:"delivery_p50_ms,omitempty"`
	DeliveryP99Ms float64 `json:"delivery_p99_ms,omitempty"`
	// The nodes' database flushes (every durable write waits for one),
	// writes and new journal epochs since the sample before: how many,
	// and the upper bound of the bucket that holds their p99 (-1: past
	// the last bucket).
	Flushes    uint64  `json:"flushes,omitempty"`
	FlushP99Ms float64 `json:"flush_p99_ms,omitempty"`
	Writes     uint64  `json:"writes,omitempty"`
	WriteP99Ms float64 `json:"write_p99_ms,omitempty"`
	Epochs     uint64  `json:"epochs,omitempty"`
	EpochP99Ms float64 `json:"epoch_p99_ms,omitempty"`
}

// Flatness thresholds: over the span after the warm-up, the fitted growth
// stays under these shares of the mean (anonymous RSS and the live heap
// alike, goroutines).
//
// The warm-up is the first half of the run. A node's memory rises until
// its caches have filled once, and at the soak's load (20 events a second
// a node, 10 a room) the slowest take minutes: Badger's memtables cycle
// every 3–4 minutes (a 4 MiB arena becomes resident as it fills, and is
// freed by the flush: RSS saw-tooths around its level from then on),
// the rooms' depth caches fill a 2,048-event generation in 3.4 minutes,
// GossipSub's seen-message cache keeps 2 minutes. Fitted from 20 % of a
// 10-minute run, a slope still shows that filling (it is reported too).
const (
	soakRSSShare       = 0.05
	soakGoroutineShare = 0.02
	soakWarmup         = 0.5
	soakEarly          = 0.2
)

// soakRooms lays out rooms rooms over n nodes: room k has about 2n/rooms
// members starting at node k·n/rooms, so that each node is in about two
// rooms and the rooms overlap.
func soakRooms(n, rooms int) [][]int {
	size := min(n, max(2, (2*n+rooms-1)/rooms))
	out := make([][]int, rooms)
	for k := range rooms {
		first := k * n / rooms
		for j := range size {
			out[k] = append(out[k], (first+j)%n)
		}
	}
	return out
}

// soak: Nodes nodes in Rooms overlapping rooms say Rate messages a second
// in all, round-robin over the rooms and their members, for Duration; the
// nodes' RSS, heap and goroutines are sampled all along. At the end every
// room's members hold every message in one order, and the samples after
// the warm-up give the slopes.
func (r *runner) soak(ctx context.Context) (res ScenarioResult, err error) {
	res.OrderIdentical = true
	res.OrderChecked = true
	n := r.cfg.Nodes
	base := usage{At: time.Now()}
	if r.cfg.inProcess() {
		quiesce()
		if base, err = selfUsage(); err != nil {
			return res, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
	}
	c, err := r.start(ctx, n)
	if err != nil {
		return res, err
	}
	defer c.Close()
	m, ok := c.(meter)
	if !ok {
		return res, fmt.Errorf("%w: this mode cannot measure its nodes", ErrUnsupported)
	}
	groups := soakRooms(n, r.cfg.Rooms)
	sr := &SoakResult{Rooms: len(groups), RoomSize: len(groups[0]), Rate: r.cfg.Rate, DurationS: r.cfg.Duration.Seconds()}
	res.Soak = sr
	rooms, bases, err := r.openRooms(ctx, c, "soak", groups)
	if err != nil {
		return res, err
	}
	total := r.cfg.messages()
	perRoom := (total + len(groups) - 1) / len(groups)
	recs := make([]*recorder, len(groups))
	win := newWindow()
	for g, nodes := range groups {
		recs[g] = newCompactRecorder(perRoom, n)
		recs[g].window = win
		s, err := r.subscribe(ctx, c, rooms[g], recs[g], nodes, &bases[g])
		if err != nil {
			return res, err
		}
		defer s.close()
	}

	interval := min(5*time.Second, max(100*time.Millisecond, r.cfg.Duration/20))
	sr.IntervalS = interval.Seconds()
	sr.Samples = make([]SoakSample, 0, int(r.cfg.Duration/interval)+8)
	st := &sendStats{}
	r.p.printf("%d nodes in %d rooms of %d say %d messages at %d/s in all, for %v; sampling every %v", n, len(groups), sr.RoomSize, total, r.cfg.Rate, r.cfg.Duration, interval)
	start := time.Now()
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan error, 1)
	var last atomic.Pointer[SoakSample]
	go func() { sampled <- r.soakSample(sampleCtx, m, base, start, interval, win, sr, &last) }()
	stop := r.p.every(ctx, 30*time.Second, func() string {
		return fmt.Sprintf("said %d/%d, %s", st.said.Load(), total, sampleLine(last.Load()))
	})
	r.sendPaced(ctx, c, r.cfg.Rate, total, 256, func(k int) (int, string, *recorder, int) {
		g := k % len(groups)
		idx := k / len(groups)
		return groups[g][idx%len(groups[g])], rooms[g], recs[g], idx
	}, st)
	stopSampling()
	stop()
	if err := <-sampled; err != nil {
		return res, err
	}
	st.record(&res)
	achieved := float64(st.said.Load()) / time.Since(start).Seconds()
	res.metric("achieved_rate_per_s", achieved)
	if n := shortRate(r.cfg.Rate, achieved); n != "" {
		res.Notes = append(res.Notes, n)
	}
	soakSlopes(sr)
	r.p.printf("live heap %+.2f MiB/min, goroutines %+.2f/min, anonymous RSS %+.2f MiB/min (all RSS %+.2f) after the warm-up: %s", sr.HeapMiBPerMin, sr.GoroutinesPerMin, sr.RSSAnonMiBPerMin, sr.RSSMiBPerMin, flatWord(sr.Flat))

	lat, says := newHistogram(), newHistogram()
	for g, nodes := range groups {
		sent := uint64(len(recs[g].sentSet()))
		if _, err := r.converge(ctx, c, rooms[g], bases[g]+sent, nodes, r.drain(sent)); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("room %d: %v", g, err))
			if res.Unconverged == "" {
				res.Unconverged = fmt.Sprintf("room %d: %v", g, err)
			}
		}
		if err := r.check(ctx, c, rooms[g], recs[g], nodes, &res); err != nil {
			return res, err
		}
		recs[g].mu.Lock()
		lat.merge(recs[g].latHist)
		says.merge(recs[g].sayHist)
		recs[g].mu.Unlock()
	}
	if res.Expected > 0 {
		res.DeliveryRatio = float64(res.Delivered) / float64(res.Expected)
	}
	res.Latency = lat.summary()
	sr.SayLatency = says.summary()
	if !sr.Flat {
		// A live heap or goroutines that grow fail the run
		// (ScenarioResult.failed); anonymous RSS alone is said here.
		res.Notes = append(res.Notes, sr.growth())
	}
	return res, nil
}

// soakSample samples the nodes every interval until ctx ends.
func (r *runner) soakSample(ctx context.Context, m meter, base usage, start time.Time, interval time.Duration, win *window, sr *SoakResult, last *atomic.Pointer[SoakSample]) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var prev usage
	for {
		u, err := m.usage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sample the nodes: %w", err)
		}
		d := u.sub(base)
		s := SoakSample{
			T:           round3(u.At.Sub(start).Seconds()),
			RSSMiB:      round3(float64(d.RSS) / (1 << 20)),
			RSSAnonMiB:  round3(float64(d.RSSAnon) / (1 << 20)),
			RSSFileMiB:  round3(float64(d.RSS-d.RSSAnon) / (1 << 20)),
			HeapMiB:     round3(float64(d.Heap) / (1 << 20)),
			HeapGoalMiB: round3(float64(d.HeapGoal) / (1 << 20)),
			Goroutines:  d.Goroutines,
		}
		if !prev.At.IsZero() {
			s.CPU = round3((u.CPU - prev.CPU).Seconds() / u.At.Sub(prev.At).Seconds())
			s.Flushes, s.FlushP99Ms = timingP99(u.Store.Flush, prev.Store.Flush)
			s.Writes, s.WriteP99Ms = timingP99(u.Store.Write, prev.Store.Write)
			s.Epochs, s.EpochP99Ms = timingP99(u.Store.Epoch, prev.Store.Epoch)
		}
		if h := win.take(); h.n > 0 {
			s.Deliveries = h.n
			s.DeliveryP50Ms, s.DeliveryP99Ms = ms(h.quantile(0.50)), ms(h.quantile(0.99))
		}
		prev = u
		sr.Samples = append(sr.Samples, s)
		last.Store(&s)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// timingP99 is how many timings came between before and now, and the
// upper bound of their p99's bucket in ms (-1: past the last bucket).
func timingP99(now, before []uint64) (uint64, float64) {
	p99, n := timingQuantile(now, before, 0.99)
	switch {
	case n == 0:
		return 0, 0
	case math.IsInf(p99, 1):
		return n, -1
	}
	return n, round3(p99 * 1000)
}

func sampleLine(s *SoakSample) string {
	if s == nil {
		return "no sample yet"
	}
	return fmt.Sprintf("RSS %.0f MiB (anon %.0f, files %.0f), live heap %.0f MiB (goal %.0f), %d goroutines, %.2f CPUs; last interval: delivery p50 %.1f p99 %.0f ms (%d), flush p99 ≤ %.1f ms (%d), write p99 ≤ %.1f ms, epoch p99 ≤ %.0f ms (%d)", s.RSSMiB, s.RSSAnonMiB, s.RSSFileMiB, s.HeapMiB, s.HeapGoalMiB, s.Goroutines, s.CPU, s.DeliveryP50Ms, s.DeliveryP99Ms, s.Deliveries, s.FlushP99Ms, s.Flushes, s.WriteP99Ms, s.EpochP99Ms, s.Epochs)
}

// soakSlopes fits the samples after the warm-up and gives the verdict.
func soakSlopes(sr *SoakResult) {
	sr.WarmupS = round3(soakWarmup * sr.DurationS)
	sr.FlatRule = fmt.Sprintf("after the first %.0f%% of the run, the fitted growth over the rest stays under %.0f%% of the mean for the live heap and for anonymous RSS, and under %.0f%% of the mean goroutines; the run fails if the live heap or the goroutines are not flat (anonymous RSS is reported only)",
		100*soakWarmup, 100*soakRSSShare, 100*soakGoroutineShare)
	var ts, rss, anon, file, heap, gor []float64
	var ts2, rss2, anon2, heap2, gor2 []float64
	for _, s := range sr.Samples {
		if s.T >= soakEarly*sr.DurationS {
			ts2 = append(ts2, s.T/60)
			rss2 = append(rss2, s.RSSMiB)
			anon2 = append(anon2, s.RSSAnonMiB)
			heap2 = append(heap2, s.HeapMiB)
			gor2 = append(gor2, float64(s.Goroutines))
		}
		if s.T < sr.WarmupS {
			continue
		}
		ts = append(ts, s.T/60)
		rss = append(rss, s.RSSMiB)
		anon = append(anon, s.RSSAnonMiB)
		file = append(file, s.RSSFileMiB)
		heap = append(heap, s.HeapMiB)
		gor = append(gor, float64(s.Goroutines))
	}
	if len(ts) < 3 {
		sr.FlatRule += " (too few samples after the warm-up to tell)"
		sr.tooFew = true
		return
	}
	slope := func(ys []float64) float64 { s, _, _ := linearFit(ts, ys); return s }
	mean := func(ys []float64) float64 {
		var t float64
		for _, y := range ys {
			t += y
		}
		return t / float64(len(ys))
	}
	span := ts[len(ts)-1] - ts[0]
	sr.RSSMiBPerMin = round3(slope(rss))
	sr.RSSAnonMiBPerMin = round3(slope(anon))
	sr.RSSFileMiBPerMin = round3(slope(file))
	sr.HeapMiBPerMin = round3(slope(heap))
	sr.GoroutinesPerMin = round3(medianSlope(ts, gor))
	if len(ts2) >= 3 {
		early := func(ys []float64) float64 { s, _, _ := linearFit(ts2, ys); return round3(s) }
		sr.RSSMiBPerMinFrom20 = early(rss2)
		sr.RSSAnonMiBPerMinFrom20 = early(anon2)
		sr.HeapMiBPerMinFrom20 = early(heap2)
		sr.GoroutinesPerMinFrom20 = round3(medianSlope(ts2, gor2))
	}
	sr.MeanRSSMiB = round3(mean(rss))
	sr.MeanRSSAnonMiB = round3(mean(anon))
	sr.MeanHeapMiB = round3(mean(heap))
	sr.MeanGoroutines = round3(mean(gor))
	if sr.MeanRSSMiB > 0 {
		sr.RSSGrowthShare = round6(sr.RSSMiBPerMin * span / sr.MeanRSSMiB)
	}
	if sr.MeanRSSAnonMiB > 0 {
		sr.RSSAnonGrowthShare = round6(sr.RSSAnonMiBPerMin * span / sr.MeanRSSAnonMiB)
	}
	if sr.MeanHeapMiB > 0 {
		sr.HeapGrowthShare = round6(sr.HeapMiBPerMin * span / sr.MeanHeapMiB)
	}
	if sr.MeanGoroutines > 0 {
		sr.GoroutineGrowthShare = round6(sr.GoroutinesPerMin * span / sr.MeanGoroutines)
	}
	sr.RSSAnonFlat = sr.RSSAnonGrowthShare < soakRSSShare
	sr.HeapFlat = sr.HeapGrowthShare < soakRSSShare
	sr.GoroutinesFlat = sr.GoroutineGrowthShare < soakGoroutineShare
	sr.Flat = sr.RSSAnonFlat && sr.HeapFlat && sr.GoroutinesFlat
}

// decisiveFlat reports whether the live heap and the goroutines stayed
// flat: a soak that is not fails.
func (sr *SoakResult) decisiveFlat() bool { return sr.HeapFlat && sr.GoroutinesFlat }

// growth says which of the judged figures grew, and by how much of its
// mean over the span after the warm-up.
func (sr *SoakResult) growth() string {
	if sr.tooFew {
		return "too few samples after the warm-up to tell whether the live heap and the goroutines stay flat"
	}
	var parts []string
	for _, f := range []struct {
		name   string
		flat   bool
		share  float64
		within float64
		note   string
	}{
		{"live heap", sr.HeapFlat, sr.HeapGrowthShare, soakRSSShare, ""},
		{"goroutines", sr.GoroutinesFlat, sr.GoroutineGrowthShare, soakGoroutineShare, ""},
		{"anonymous RSS", sr.RSSAnonFlat, sr.RSSAnonGrowthShare, soakRSSShare, ", reported only"},
	} {
		if !f.flat {
			parts = append(parts, fmt.Sprintf("%s NOT FLAT (grew %.1f%% of its mean over the second half; flat is under %.0f%%%s)", f.name, 100*f.share, 100*f.within, f.note))
		}
	}
	if len(parts) == 0 {
		return "live heap, goroutines and anonymous RSS flat"
	}
	return strings.Join(parts, "; ")
}

func flatWord(flat bool) string {
	if flat {
		return "flat"
	}
	return "NOT FLAT"
}

// medianSlope is the Theil–Sen slope of ys over xs: the median of the
// slopes between every pair of points with distinct xs.
func medianSlope(xs, ys []float64) float64 {
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if dx := xs[j] - xs[i]; dx != 0 {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	slices.Sort(slopes)
	m := len(slopes) / 2
	if len(slopes)%2 == 1 {
		return slopes[m]
	}
	return (slopes[m-1] + slopes[m]) / 2
}
