package inbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

// BenchmarkTake1000Rooms measures an agent's take when it is in 1,000 rooms
// and one of them has a new message: the take reads only that room.
// Target: ≤ 1 ms.
func BenchmarkTake1000Rooms(b *testing.B) { benchTake(b, 1000) }

func benchTake(b *testing.B, n int) {
	b.Helper()
	nt := start(b, 1, func(c *node.Config) { c.AgentPostLimit = -1 }) // it posts as fast as it can
	register(b, nt, 0, "reader")
	ctx := context.Background()
	edge := ib(nt, 0)
	rooms := make([]string, n)
	for i := range rooms {
		res, err := edge.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: fmt.Sprintf("room-%04d", i)})
		if err != nil {
			b.Fatal(err)
		}
		rooms[i] = res.RoomID
		if _, err := edge.Invite(ctx, "human", localapi.InviteRequest{Room: rooms[i], Member: "reader"}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := edge.Take(ctx, "reader"); err != nil { // the first take reads every room
		b.Fatal(err)
	}
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := edge.Say(ctx, "human", localapi.SayRequest{Room: rooms[i%n], Text: fmt.Sprintf("m%d", i)}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		p, err := edge.Take(ctx, "reader")
		total += time.Since(t0)
		if err != nil || len(p.Items) != 1 {
			b.Fatalf("take: %d items, %v", len(p.Items), err)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/take")
}
