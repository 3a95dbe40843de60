// Package ratelimit holds a token bucket per peer whose memory is bounded
// whatever the number of peers: a node that limits what each peer may ask
// of it must not let a stranger with a stream of fresh keys grow the table
// of buckets.
package ratelimit

import (
	"sync"
	"time"
)

// MaxKeys is how many keys a Limiter keeps a bucket for by default.
const MaxKeys = 4096

// pruneEvery is how often at most a full Limiter looks for buckets to drop.
const pruneEvery = time.Second

// Limiter lets each key take Rate tokens a minute, bursting to Rate. It keeps
// a bucket for at most Max keys; a bucket refilled for a minute is the same
// as a new one, so it is dropped once the table is full. While every kept
// key was seen within the minute, new keys share one more bucket (of Rate
// tokens as well): a flood of fresh keys is limited as one peer, and the
// keys already kept go on as before.
type Limiter[K comparable] struct {
	rate float64
	max  int

	mu        sync.Mutex // protects the fields below
	b         map[K]*bucket
	overflow  bucket
	nextPrune time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// New returns a limiter of rate tokens a minute per key, keeping buckets for
// at most max keys (MaxKeys when max ≤ 0).
func New[K comparable](rate, max int) *Limiter[K] {
	if max <= 0 {
		max = MaxKeys
	}
	return &Limiter[K]{rate: float64(rate), max: max, b: make(map[K]*bucket), overflow: bucket{tokens: float64(rate)}}
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
			return l.take(&l.overflow, now)
		}
		b = &bucket{tokens: l.rate, last: now}
		l.b[k] = b
	}
	return l.take(b, now)
}

// Len is how many keys have a bucket of their own.
func (l *Limiter[K]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.b)
}

// prune drops the buckets full again (untouched for a minute) and waits
// pruneEvery before the next look, so a table full of busy keys is not
// scanned for every new key.
func (l *Limiter[K]) prune(now time.Time) {
	for k, b := range l.b {
		if now.Sub(b.last) >= time.Minute {
			delete(l.b, k)
		}
	}
	l.nextPrune = now.Add(pruneEvery)
}

func (l *Limiter[K]) take(b *bucket, now time.Time) bool {
	if !b.last.IsZero() {
		b.tokens = min(l.rate, b.tokens+max(0, now.Sub(b.last).Minutes())*l.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
