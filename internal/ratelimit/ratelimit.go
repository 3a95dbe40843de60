// Package ratelimit holds a token bucket per peer whose memory is bounded
// whatever the number of peers: a node that limits what each peer may ask
// of it must not let a stranger with a stream of fresh keys grow the table
// of buckets.
package ratelimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// MaxKeys is how many keys a Limiter keeps a bucket for by default.
const MaxKeys = 4096

// pruneEvery is how often at most a full Limiter looks for buckets to drop.
const pruneEvery = time.Second

// Limiter lets each key take rate tokens a minute, bursting to rate: a
// golang.org/x/time/rate bucket per key. It keeps a bucket for at most max
// keys; a bucket full again (untouched for a minute) is the same as a new
// one, so it is dropped once the table is full. While every kept key was
// seen within the minute, new keys share one more bucket: a flood of fresh
// keys is limited as one peer, and the keys already kept go on as before.
type Limiter[K comparable] struct {
	every rate.Limit
	burst int
	max   int

	mu        sync.Mutex // protects the fields below
	b         map[K]*rate.Limiter
	overflow  *rate.Limiter
	nextPrune time.Time
}

// New returns a limiter of perMinute tokens a minute per key, keeping
// buckets for at most max keys (MaxKeys when max ≤ 0).
func New[K comparable](perMinute, max int) *Limiter[K] {
	if max <= 0 {
		max = MaxKeys
	}
	every := rate.Limit(float64(perMinute) / 60)
	return &Limiter[K]{every: every, burst: perMinute, max: max, b: make(map[K]*rate.Limiter),
		overflow: rate.NewLimiter(every, perMinute)}
}

// Allow takes one token from k's bucket at now and reports whether there
// was one.
func (l *Limiter[K]) Allow(k K, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.b[k]
	if b == nil {
		if len(l.b) >= l.max && !now.Before(l.nextPrune) {
			l.prune(now)
		}
		if len(l.b) >= l.max {
			return l.overflow.AllowN(now, 1)
		}
		b = rate.NewLimiter(l.every, l.burst)
		l.b[k] = b
	}
	return b.AllowN(now, 1)
}

// Len is how many keys have a bucket of their own.
func (l *Limiter[K]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.b)
}

// prune drops the buckets full again and waits pruneEvery before the next
// look, so a table full of busy keys is not scanned for every new key.
func (l *Limiter[K]) prune(now time.Time) {
	for k, b := range l.b {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.b, k)
		}
	}
	l.nextPrune = now.Add(pruneEvery)
}
