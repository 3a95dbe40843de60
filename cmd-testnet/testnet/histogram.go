package testnet

import (
	"math"
	"sync"
	"time"
)

// histogram counts durations in buckets that grow by 2 % from 1 µs to
// about 12 days: fixed memory however many it counts, percentiles
// within 2 %.
type histogram struct {
	counts []int64
	n      int64
	sum    time.Duration
	min    time.Duration
	max    time.Duration
}

const (
	histGrowth  = 1.02
	histBuckets = 1400 // 1.02^1400 µs ≈ 1.1e6 s
)

func newHistogram() *histogram { return &histogram{counts: make([]int64, histBuckets)} }

// bucket is the index of d's bucket: bucket k holds [1.02^k, 1.02^(k+1)) µs.
func histBucket(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us < 1 {
		return 0
	}
	return min(histBuckets-1, int(math.Log(us)/math.Log(histGrowth)))
}

func (h *histogram) add(d time.Duration) {
	h.counts[histBucket(d)]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
	h.sum += d
}

// merge adds o's counts to h.
func (h *histogram) merge(o *histogram) {
	if o == nil || o.n == 0 {
		return
	}
	for k, c := range o.counts {
		h.counts[k] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// quantile is the upper bound of the bucket that holds the q-th quantile
// (nearest rank), at most the largest value counted.
func (h *histogram) quantile(q float64) time.Duration {
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen int64
	for k, c := range h.counts {
		seen += c
		if seen >= rank {
			upper := time.Duration(math.Pow(histGrowth, float64(k+1)) * float64(time.Microsecond))
			return min(upper, h.max)
		}
	}
	return h.max
}

// summary is the histogram's Latency (nil when empty).
func (h *histogram) summary() *Latency {
	if h == nil || h.n == 0 {
		return nil
	}
	return &Latency{
		Count: int(h.n),
		Min:   ms(h.min),
		Mean:  round3(ms(h.sum) / float64(h.n)),
		P50:   ms(h.quantile(0.50)),
		P90:   ms(h.quantile(0.90)),
		P95:   ms(h.quantile(0.95)),
		P99:   ms(h.quantile(0.99)),
		P999:  ms(h.quantile(0.999)),
		Max:   ms(h.max),
	}
}

// window counts latencies from several goroutines until take hands them
// over and starts again: a run's latency over each sampling interval.
type window struct {
	mu sync.Mutex
	h  *histogram
}

func newWindow() *window { return &window{h: newHistogram()} }

func (w *window) add(d time.Duration) {
	w.mu.Lock()
	w.h.add(d)
	w.mu.Unlock()
}

// take returns what was counted since the last take.
func (w *window) take() *histogram {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.h
	w.h = newHistogram()
	return h
}
