package board

import (
	"fmt"
	"testing"
	"time"
)

// foldOf10k is a board of 10,000 claims, one a second, of 10 agents on
// 37 packages, each held for ten minutes, folded up to its last one.
func foldOf10k(b *testing.B) (*State, time.Time) {
	s := NewState()
	for i := range 10_000 {
		s.Add(claim(b, fmt.Sprintf("e%05d", i), fmt.Sprintf("agent%d@p", i%10), int64(i)*1000, 10*time.Minute,
			"work", fmt.Sprintf("pkg%d/file%d.go", i%37, i)))
	}
	now := time.UnixMilli(10_000 * 1000)
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
			s, now := foldOf10k(b)
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
