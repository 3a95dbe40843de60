package lograte

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// Past its burst a Limiter drops lines, and the next line it writes says
// how many it dropped; a level the logger does not write counts nothing.
func TestLimiterDropsAndCounts(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l := New(3)
	for range 10 {
		l.Log(log, slog.LevelInfo, "refused", "peer", "p")
	}
	if n := strings.Count(buf.String(), "msg=refused"); n != 3 {
		t.Fatalf("%d lines written of 10 with a burst of 3:\n%s", n, buf.String())
	}
	for range 5 {
		l.Log(log, slog.LevelDebug, "not written")
	}
	l.mu.Lock()
	dropped := l.dropped
	l.mu.Unlock()
	if dropped != 7 {
		t.Fatalf("dropped %d, want 7 (debug lines are not counted)", dropped)
	}
	// The next line let through carries the count.
	l.lim.SetBurst(4)
	l.lim.SetLimit(1e9)
	l.Log(log, slog.LevelInfo, "refused", "peer", "p")
	if !strings.Contains(buf.String(), "dropped=7") {
		t.Fatalf("the line after drops does not say how many:\n%s", buf.String())
	}
}
