package testnet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parley-mesh/parley/internal/store"
)

// usage is what a cluster's nodes use at one moment, all nodes together.
type usage struct {
	At         time.Time
	CPU        time.Duration // CPU time (user + system) used so far
	RSS        int64         // resident bytes
	RSSAnon    int64         // resident anonymous bytes (no mapped files)
	Heap       int64         // Go heap: live bytes at the last GC (processes: heap in use)
	HeapGoal   int64         // the GC's heap goal (in-process only): where RSS heads when garbage piles up
	Goroutines int
	Peers      int // connected peers, summed over the nodes
	FDs        int // open files, sockets included
	// Store is the nodes' database timings so far, added up.
	Store storeTimes
}

// storeTimes are the database timings of nodes, added up: for each of
// store.FlushBuckets how many took at most that long, then how many in all.
type storeTimes struct {
	Flush, Write, Epoch []uint64
}

// add adds a node's timings.
func (s *storeTimes) add(t store.Timings) {
	s.Flush = addTiming(s.Flush, t.Flush)
	s.Write = addTiming(s.Write, t.Write)
	s.Epoch = addTiming(s.Epoch, t.Epoch)
}

func addTiming(sum []uint64, t store.Timing) []uint64 {
	if len(t.Cumulative) != len(store.FlushBuckets) {
		return sum
	}
	if sum == nil {
		sum = make([]uint64, len(store.FlushBuckets)+1)
	}
	for i, c := range t.Cumulative {
		sum[i] += c
	}
	sum[len(t.Cumulative)] += t.Count
	return sum
}

// timingQuantile is the upper bound, in seconds, of the bucket that holds
// the q-th quantile of the timings counted between before and now (+Inf:
// past the last bucket), and how many there were.
func timingQuantile(now, before []uint64, q float64) (float64, uint64) {
	at := func(v []uint64, i int) uint64 {
		if len(v) == 0 {
			return 0
		}
		return v[i]
	}
	if len(now) == 0 {
		return 0, 0
	}
	last := len(now) - 1
	if at(now, last) <= at(before, last) {
		return 0, 0 // none, or a node restarted or stopped meanwhile
	}
	n := at(now, last) - at(before, last)
	rank := uint64(math.Ceil(q * float64(n)))
	for i, le := range store.FlushBuckets {
		if at(now, i) >= at(before, i) && at(now, i)-at(before, i) >= rank {
			return le, n
		}
	}
	return math.Inf(1), n
}

// sub returns u minus base (the figures a process had before its nodes).
func (u usage) sub(base usage) usage {
	u.CPU -= base.CPU
	u.RSS -= base.RSS
	u.RSSAnon -= base.RSSAnon
	u.Heap -= base.Heap
	u.HeapGoal -= base.HeapGoal
	u.Goroutines -= base.Goroutines
	u.Peers -= base.Peers
	u.FDs -= base.FDs
	return u
}

// meter is a cluster that can say what its nodes use.
type meter interface {
	usage(ctx context.Context) (usage, error)
}

// selfUsage measures this process.
func selfUsage() (usage, error) {
	p, err := readProc(0)
	if err != nil {
		return usage{}, err
	}
	u := usage{At: time.Now(), CPU: p.CPU, RSS: p.RSS, RSSAnon: p.RSSAnon, Goroutines: runtime.NumGoroutine(), FDs: p.FDs}
	if cpu, ok := processCPU(); ok {
		u.CPU = cpu // getrusage has a finer grain than /proc's ticks
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		u.Heap = int64(s[0].Value.Uint64())
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		u.HeapGoal = int64(s[1].Value.Uint64())
	}
	return u, nil
}

// quiesce collects garbage and gives freed memory back to the system, so
// that the next RSS reading shows what is live.
func quiesce() {
	runtime.GC()
	debug.FreeOSMemory()
}

func (c *inproc) usage(context.Context) (usage, error) {
	u, err := selfUsage()
	if err != nil {
		return u, err
	}
	for i := range c.Len() {
		if n := c.net.Node(i); n != nil {
			u.Peers += len(n.Host().Network().Peers())
			u.Store.add(n.StoreTimings())
		}
	}
	return u, nil
}

// usage adds up the node processes: CPU and memory from /proc, goroutines,
// heap and peers from each node's metrics.
func (c *procs) usage(ctx context.Context) (usage, error) {
	c.mu.Lock()
	var nodes []*procNode
	for _, p := range c.nodes {
		if p != nil && p.running() {
			nodes = append(nodes, p)
		}
	}
	c.mu.Unlock()
	total := usage{At: time.Now()}
	var mu sync.Mutex // protects total, errs
	var errs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, p := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			pu, err := readProc(p.cmd.Process.Pid)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("node %d: %w", p.i, err))
				mu.Unlock()
				return
			}
			mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			text, err := p.client.Metrics(mctx)
			cancel()
			m := promValues(text, "go_goroutines", "go_memstats_heap_inuse_bytes", "parley_peers_connected")
			var st store.Timings
			for _, h := range []struct {
				name string
				t    *store.Timing
			}{{"parley_store_flush_seconds", &st.Flush}, {"parley_store_write_seconds", &st.Write}, {"parley_store_journal_epoch_seconds", &st.Epoch}} {
				h.t.Cumulative, h.t.Count = promHistogram(text, h.name, store.FlushBuckets)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("node %d: metrics: %w", p.i, err))
			}
			total.CPU += pu.CPU
			total.RSS += pu.RSS
			total.RSSAnon += pu.RSSAnon
			total.FDs += pu.FDs
			total.Goroutines += int(m["go_goroutines"])
			total.Heap += int64(m["go_memstats_heap_inuse_bytes"])
			total.Peers += int(m["parley_peers_connected"])
			total.Store.add(st)
		}()
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// promValues picks the named unlabelled series out of Prometheus text.
func promValues(text string, names ...string) map[string]float64 {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	out := make(map[string]float64, len(names))
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// promHistogram reads histogram name out of Prometheus text: the
// cumulative count of each bucket of bounds, and the count of all (nil if
// a bucket is missing).
func promHistogram(text, name string, bounds []float64) (cumulative []uint64, count uint64) {
	byBound := make(map[float64]uint64, len(bounds))
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		series, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		if series == name+"_count" {
			count = uint64(v)
			continue
		}
		le, ok := strings.CutPrefix(series, name+`_bucket{le="`)
		if !ok {
			continue
		}
		if b, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64); err == nil {
			byBound[b] = uint64(v)
		}
	}
	for _, b := range bounds {
		c, ok := byBound[b]
		if !ok {
			return nil, 0
		}
		cumulative = append(cumulative, c)
	}
	return cumulative, count
}

// linearFit fits y = intercept + slope·x by least squares; r2 is the
// coefficient of determination (1 when the points lie on the line, and
// when y does not vary).
func linearFit(xs, ys []float64) (slope, intercept, r2 float64) {
	n := float64(len(xs))
	if len(xs) == 0 || len(xs) != len(ys) {
		return 0, 0, 0
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return 0, my, 0
	}
	slope = sxy / sxx
	intercept = my - slope*mx
	if syy == 0 {
		return slope, intercept, 1
	}
	return slope, intercept, sxy * sxy / (sxx * syy)
}
