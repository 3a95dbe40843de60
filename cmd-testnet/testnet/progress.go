package testnet

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress writes timestamped lines about the run, so that a long run does
// not look hung.
type progress struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex // serializes writes
	scen  string
}

func newProgress(w io.Writer) *progress {
	if w == nil {
		w = io.Discard
	}
	return &progress{w: w, start: time.Now()}
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prefix := ""
	if p.scen != "" {
		prefix = p.scen + ": "
	}
	fmt.Fprintf(p.w, "[%6.1fs] %s%s\n", time.Since(p.start).Seconds(), prefix, fmt.Sprintf(format, args...))
}

func (p *progress) scenario(name string) {
	p.mu.Lock()
	p.scen = name
	p.mu.Unlock()
}

// every prints status() every interval until the returned stop is called.
func (p *progress) every(ctx context.Context, interval time.Duration, status func() string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.printf("%s", status())
			}
		}
	}()
	return func() { cancel(); <-done }
}

// recorder tracks the messages of a scenario: when each was said, by whom,
// and when each node stored it.
type recorder struct {
	start  time.Time
	sentAt []atomic.Int64 // ns after start at the Say call; 0: not (yet) said
	sender []atomic.Int32
	okSent atomic.Int64 // Says that returned without error

	mu        sync.Mutex // protects the fields below
	lat       []time.Duration
	seen      [][]uint64 // per node: a bit for each message stored
	delivered int
	sayDur    []time.Duration
	// With compact set, latencies go into histograms instead of lat and
	// sayDur, so that a long run's bookkeeping does not grow.
	latHist, sayHist *histogram
	// window, if set, also counts each delivery's latency (shared by
	// several recorders).
	window *window
}

func newRecorder(messages, nodes int) *recorder {
	r := &recorder{start: time.Now(), sentAt: make([]atomic.Int64, messages), sender: make([]atomic.Int32, messages), seen: make([][]uint64, nodes)}
	for i := range r.seen {
		r.seen[i] = make([]uint64, (messages+63)/64)
	}
	return r
}

// newCompactRecorder is a recorder whose memory does not grow as
// deliveries come: latencies are counted in histograms.
func newCompactRecorder(messages, nodes int) *recorder {
	r := newRecorder(messages, nodes)
	r.latHist, r.sayHist = newHistogram(), newHistogram()
	return r
}

// text returns message idx padded to size bytes.
func msgText(idx, size int) string {
	s := "tn " + strconv.Itoa(idx) + " "
	if len(s) < size {
		s += strings.Repeat("x", size-len(s))
	}
	return s
}

// msgIndex parses a message text; -1 if it is not a testnet message.
func msgIndex(text string) int {
	rest, ok := strings.CutPrefix(text, "tn ")
	if !ok {
		return -1
	}
	if i := strings.IndexByte(rest, ' '); i >= 0 {
		rest = rest[:i]
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return -1
	}
	return n
}

// said marks message idx as being said by node now and returns the mark.
func (r *recorder) said(idx, node int) time.Time {
	now := time.Now()
	r.sender[idx].Store(int32(node))
	r.sentAt[idx].Store(int64(now.Sub(r.start)) + 1)
	return now
}

// sayDone records how long a successful Say took.
func (r *recorder) sayDone(d time.Duration) {
	r.okSent.Add(1)
	r.mu.Lock()
	if r.sayHist != nil {
		r.sayHist.add(d)
	} else {
		r.sayDur = append(r.sayDur, d)
	}
	r.mu.Unlock()
}

// unsay forgets a message whose Say failed.
func (r *recorder) unsay(idx int) { r.sentAt[idx].Store(0) }

// deliver records that node stored text at time at.
func (r *recorder) deliver(node int, text string, at time.Time) {
	idx := msgIndex(text)
	if idx < 0 || idx >= len(r.sentAt) {
		return
	}
	sent := r.sentAt[idx].Load()
	r.mu.Lock()
	defer r.mu.Unlock()
	word, bit := idx/64, uint64(1)<<(idx%64)
	if r.seen[node][word]&bit != 0 {
		return
	}
	r.seen[node][word] |= bit
	if sent == 0 || int(r.sender[idx].Load()) == node {
		return
	}
	r.delivered++
	d := at.Sub(r.start.Add(time.Duration(sent - 1)))
	if r.window != nil {
		r.window.add(d)
	}
	if r.latHist != nil {
		r.latHist.add(d)
		return
	}
	r.lat = append(r.lat, d)
}

// live returns the deliveries seen by subscriptions so far.
func (r *recorder) live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.delivered
}

// latencies returns a copy of the delivery latencies.
func (r *recorder) latencies() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.lat...)
}

func (r *recorder) sayDurations() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.sayDur...)
}

// sentSet returns the messages said successfully and their senders.
func (r *recorder) sentSet() map[int]int {
	out := make(map[int]int)
	for i := range r.sentAt {
		if r.sentAt[i].Load() != 0 {
			out[i] = int(r.sender[i].Load())
		}
	}
	return out
}
