//go:build unix

package rooms_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/rooms"
)

// BenchmarkDeliveryCPU: node 0 says b.N messages of 1 KiB at 100 a second
// (cmd-testnet's fanout pace) into a room of 4 nodes; the process's CPU
// time and allocations (all four nodes) per delivery, a delivery being one
// message visible (Subscribe) on one of the three other nodes. Run with
//
//	go test -run '^$' -bench DeliveryCPU -benchtime 500x ./rooms
func BenchmarkDeliveryCPU(b *testing.B) {
	const receivers = 3
	nt := benchNet(b, 1+receivers)
	id := benchRoom(b, nt)
	var seen [receivers]chan rooms.ID
	for i := range receivers {
		ch, stop, err := nt.Node(1+i).Rooms().Subscribe(id, 1<<14)
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		seen[i] = make(chan rooms.ID, 1<<14)
		go func() {
			for v := range ch {
				seen[i] <- v.ID
			}
		}()
	}
	m0 := nt.Node(0).Rooms()
	say := func(text string) rooms.ID {
		eid, err := m0.Say(context.Background(), id, rooms.SayArgs{Agent: "bench", Text: text})
		if err != nil {
			b.Fatal(err)
		}
		return eid
	}
	// Warm up: the topic's mesh forms at a GossipSub heartbeat.
	waitAll := func(last rooms.ID, d time.Duration) bool {
		deadline := time.After(d)
		for i := range receivers {
			var got rooms.ID
			for got != last {
				select {
				case got = <-seen[i]:
				case <-deadline:
					return false
				}
			}
		}
		return true
	}
	nt.WaitFor(30*time.Second, func() bool { return waitAll(say("warm-up"), 2*time.Second) }, "gossip to carry a message")
	text := fmt.Sprintf("%-1024s", "bench")
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := processCPU(b)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last rooms.ID
	for b.Loop() {
		<-tick.C
		last = say(text)
	}
	if !waitAll(last, time.Minute) {
		b.Fatal("not every message visible on every node after a minute")
	}
	cpu := processCPU(b) - cpu0
	runtime.ReadMemStats(&ms1)
	d := float64(b.N * receivers)
	b.ReportMetric(float64(cpu.Microseconds())/d, "cpu-µs/delivery")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/d, "allocs/delivery")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/d, "B/delivery")
}

// processCPU is the CPU time (user and system) this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
