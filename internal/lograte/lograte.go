// Package lograte keeps the log lines that other nodes can cause (input
// refused from a peer) to a few a minute, so a peer that sends a flood of
// bad input cannot fill the disk through the node's log. The lines it drops
// are counted, and the next line it lets through says how many.
package lograte

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter lets through perMinute lines a minute, in bursts of as many.
type Limiter struct {
	lim     *rate.Limiter
	mu      sync.Mutex
	dropped int
}

// New returns a Limiter of perMinute lines a minute (at least 1).
func New(perMinute int) *Limiter {
	perMinute = max(perMinute, 1)
	return &Limiter{lim: rate.NewLimiter(rate.Every(time.Minute/time.Duration(perMinute)), perMinute)}
}

// Log writes the line at level through log if the limit allows it, with
// "dropped" (the lines dropped since the last one written) when any were;
// otherwise it only counts the line.
func (l *Limiter) Log(log *slog.Logger, level slog.Level, msg string, args ...any) {
	if !log.Enabled(context.Background(), level) {
		return
	}
	l.mu.Lock()
	if !l.lim.Allow() {
		l.dropped++
		l.mu.Unlock()
		return
	}
	n := l.dropped
	l.dropped = 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "dropped", n)
	}
	log.Log(context.Background(), level, msg, args...)
}
