package ratelimit

import (
	"testing"
	"time"
)

func TestBucketRefillsAtRate(t *testing.T) {
	l := New[string](6, 0)
	now := time.Unix(1_000_000, 0)
	for i := range 6 {
		if !l.Allow("a", now) {
			t.Fatalf("token %d of the burst refused", i)
		}
	}
	if l.Allow("a", now) {
		t.Fatal("a seventh token in the same instant")
	}
	if !l.Allow("b", now) {
		t.Fatal("another key shares a's bucket")
	}
	// 6 a minute: one token every 10 s.
	if l.Allow("a", now.Add(9*time.Second)) {
		t.Fatal("a token before 10 s")
	}
	if !l.Allow("a", now.Add(19*time.Second)) {
		t.Fatal("no token after 19 s")
	}
}

// TestFreshKeysGrowNoTable: a stream of keys never seen before keeps the
// table at its bound, shares one bucket once it is full, and a key kept
// from before is limited on its own.
func TestFreshKeysGrowNoTable(t *testing.T) {
	const max = 64
	l := New[int](3, max)
	now := time.Unix(1_000_000, 0)
	for k := range max {
		if !l.Allow(k, now) {
			t.Fatalf("key %d refused while the table had room", k)
		}
	}
	allowed := 0
	for k := max; k < 100_000; k++ {
		if l.Allow(k, now.Add(time.Duration(k)*time.Microsecond)) {
			allowed++
		}
	}
	if n := l.Len(); n != max {
		t.Fatalf("%d buckets kept, bound %d", n, max)
	}
	if allowed > 3 {
		t.Fatalf("%d of the fresh keys' requests allowed within a tenth of a second, want the overflow's 3", allowed)
	}
	// Key 0 still has its own bucket: two tokens left.
	at := now.Add(200 * time.Millisecond)
	if !l.Allow(0, at) || !l.Allow(0, at) || l.Allow(0, at) {
		t.Fatal("a kept key lost its own bucket")
	}
}

// TestIdleBucketsMakeRoom: once a minute has passed, the buckets of keys
// gone quiet are dropped for new keys.
func TestIdleBucketsMakeRoom(t *testing.T) {
	const max = 8
	l := New[int](1, max)
	now := time.Unix(1_000_000, 0)
	for k := range max {
		l.Allow(k, now)
	}
	later := now.Add(time.Minute)
	if !l.Allow(max, later) {
		t.Fatal("a new key refused after every kept key was idle for a minute")
	}
	if n := l.Len(); n != 1 {
		t.Fatalf("%d buckets after the prune, want 1", n)
	}
}
