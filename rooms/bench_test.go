package rooms_test

// Benchmarks of the figures the rooms issue asks for, on real nodes on
// 127.0.0.1. Each reports its figure with b.ReportMetric; ns/op is the
// whole operation. Run them with
//
//	go test -run '^$' -bench . -benchtime 1x ./rooms
//
// (cmd-testnet measures the same things on more nodes: `go run ./cmd-testnet -scenario fanout,restart`.)

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// benchNet starts n nodes that invite any connected node and run
// anti-entropy every second.
func benchNet(b *testing.B, n int) *nodetest.Net {
	b.Helper()
	return nodetest.Start(b, n, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		c.NoLocalAPI = true
	}))
}

// benchRoom opens a room on node 0 with the other nodes as members and
// waits until every node holds the same events.
func benchRoom(b *testing.B, nt *nodetest.Net) identity.RoomID {
	b.Helper()
	ctx := context.Background()
	m0 := nt.Node(0).Rooms()
	id, err := m0.Create(ctx, "bench", identity.HumanAgent)
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i < nt.Len(); i++ {
		nt.WaitFor(10*time.Second, func() bool {
			return nt.Node(0).Host().Network().Connectedness(nt.ID(i)) == network.Connected
		}, "node %d connected to node 0", i)
		if _, err := m0.Invite(ctx, id, nt.ID(i), identity.HumanAgent); err != nil {
			b.Fatalf("invite node %d: %v", i, err)
		}
	}
	benchConverged(b, nt, id, 1+uint64(nt.Len()-1), 30*time.Second)
	return id
}

// benchConverged waits until every running node holds the same number of
// events of id, at least least.
func benchConverged(b *testing.B, nt *nodetest.Net, id identity.RoomID, least uint64, timeout time.Duration) {
	b.Helper()
	nt.WaitFor(timeout, func() bool {
		var counts []uint64
		for i := range nt.Len() {
			if n := nt.Node(i); n != nil {
				in, err := n.Rooms().Get(id)
				if err != nil {
					return false
				}
				counts = append(counts, in.Events)
			}
		}
		return slices.Min(counts) >= least && slices.Min(counts) == slices.Max(counts)
	}, "every node to hold the same %d+ events", least)
}

// benchSay posts n messages of size bytes from m, 64 at a time.
func benchSay(m *rooms.Manager, id identity.RoomID, n, size int) error {
	text := fmt.Sprintf("%-*s", size, "bench")
	work := make(chan struct{})
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if _, err := m.Say(context.Background(), id, rooms.SayArgs{Agent: "bench", Text: text}); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for range n {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// BenchmarkSayToVisible: one 1 KiB message said on node 0 until it is
// stored and visible (Subscribe) on node 1. Reports the p50 and p99 of the
// b.N latencies.
func BenchmarkSayToVisible(b *testing.B) {
	nt := benchNet(b, 2)
	id := benchRoom(b, nt)
	ch, stop, err := nt.Node(1).Rooms().Subscribe(id, 1024)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	m0 := nt.Node(0).Rooms()
	text := fmt.Sprintf("%-1024s", "hello")
	// Warm up until gossip carries a message (the topic mesh forms at a
	// GossipSub heartbeat).
	nt.WaitFor(10*time.Second, func() bool {
		if _, err := m0.Say(context.Background(), id, rooms.SayArgs{Agent: "bench", Text: "warm-up"}); err != nil {
			b.Fatal(err)
		}
		t := time.NewTimer(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case v := <-ch:
				if v.Text == "warm-up" {
					return true
				}
			case <-t.C:
				return false
			}
		}
	}, "gossip to carry a message")
	lat := make([]time.Duration, 0, b.N)
	timeout := time.NewTimer(time.Hour)
	defer timeout.Stop()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		eid, err := m0.Say(context.Background(), id, rooms.SayArgs{Agent: "bench", Text: text})
		if err != nil {
			b.Fatal(err)
		}
		timeout.Reset(30 * time.Second)
	wait:
		for {
			select {
			case v, ok := <-ch:
				if !ok {
					b.Fatal("subscription closed")
				}
				if v.ID == eid {
					break wait
				}
			case <-timeout.C:
				b.Fatalf("message %d not visible on node 1 after 30 s", i)
			}
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(f float64) float64 {
		return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// BenchmarkCatchUp10000: node 2 is away while nodes 0 and 1 say 10,000
// events; the time from its restart until it holds them all.
func BenchmarkCatchUp10000(b *testing.B) {
	const events = 10_000
	for b.Loop() {
		b.StopTimer()
		nt := benchNet(b, 3)
		id := benchRoom(b, nt)
		nt.Crash(2)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = benchSay(nt.Node(i).Rooms(), id, events/2, 256)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		in, err := nt.Node(0).Rooms().Get(id)
		if err != nil {
			b.Fatal(err)
		}
		want := in.Events
		b.StartTimer()
		t0 := time.Now()
		nt.Restart(2)
		nt.WaitFor(2*time.Minute, func() bool {
			in, err := nt.Node(2).Rooms().Get(id)
			return err == nil && in.Events >= want
		}, "node 2 to catch up with %d events", want)
		d := time.Since(t0)
		b.StopTimer()
		b.ReportMetric(float64(d.Milliseconds()), "catchup-ms")
		b.ReportMetric(events/d.Seconds(), "events/s")
		nt.Close()
		b.StartTimer()
	}
}

// BenchmarkOpen100kReadLast50: a node holding a room of 100,000 events
// restarts and reads the room's last 50 events.
func BenchmarkOpen100kReadLast50(b *testing.B) {
	const events = 100_000
	nt := benchNet(b, 1)
	m := nt.Node(0).Rooms()
	id, err := m.Create(context.Background(), "big", identity.HumanAgent)
	if err != nil {
		b.Fatal(err)
	}
	if err := benchSay(m, id, events, 200); err != nil {
		b.Fatal(err)
	}
	var open, read time.Duration
	runs := 0
	for b.Loop() {
		b.StopTimer()
		nt.Crash(0)
		b.StartTimer()
		t0 := time.Now()
		n := nt.Restart(0)
		t1 := time.Now()
		vs, err := n.Rooms().Log(id, 50, nil)
		if err != nil || len(vs) != 50 {
			b.Fatalf("last 50 after restart: %d events, %v", len(vs), err)
		}
		open += t1.Sub(t0)
		read += time.Since(t1)
		runs++
	}
	b.ReportMetric(float64(open.Microseconds())/1000/float64(runs), "reopen-ms")
	b.ReportMetric(float64(read.Microseconds())/1000/float64(runs), "read50-ms")
	b.ReportMetric(float64((open+read).Microseconds())/1000/float64(runs), "open+read50-ms")
}
