package board

import (
	"fmt"
	"testing"
	"time"
)

// busyBoard is a board of n claims, one a second, of 10 agents on 37
// packages, each held for ttl, folded up to its last one, and the time of
// its last second.
func busyBoard(tb testing.TB, n int, ttl time.Duration) (*State, time.Time) {
	s := NewState()
	for i := range n {
		s.Add(claim(tb, fmt.Sprintf("e%05d", i), fmt.Sprintf("agent%d@p", i%10), int64(i)*1000, ttl,
			"work", fmt.Sprintf("pkg%d/file%d.go", i%37, i)))
	}
	now := time.UnixMilli(int64(n) * 1000)
	s.Live(now)
	return s, now
}

// BenchmarkBackdatedClaim: a read of a board of 10,000 claims after a
// claim of a minute dated back arrived, to the first claim's time or ten
// minutes back (600 claims after it), and one held for MaxTTL dated to
// the first claim's time (it holds past the board's last claim, so the
// whole board is folded again).
//
//	go test -run '^$' -bench BackdatedClaim ./rooms/board
func BenchmarkBackdatedClaim(b *testing.B) {
	for _, back := range []struct {
		name string
		at   int64
		ttl  time.Duration
	}{{"first", 0, time.Minute}, {"10min", (10_000 - 600) * 1000, time.Minute}, {"first-maxttl", 0, MaxTTL}} {
		b.Run(back.name, func(b *testing.B) {
			s, now := busyBoard(b, 10_000, 10*time.Minute)
			b.ResetTimer()
			for i := range b.N {
				s.Add(claim(b, fmt.Sprintf("late%d", i), "late@q", back.at+int64(i%1000), back.ttl, "late", fmt.Sprintf("late/%d.go", i)))
				if len(s.Live(now)) == 0 {
					b.Fatal("empty board")
				}
			}
		})
	}
}
