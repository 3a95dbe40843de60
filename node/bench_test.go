package node_test

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// BenchmarkTestnet20Memory starts a 20-node in-process testnet, waits until
// every node has a DHT routing table, and reports the memory it holds.
func BenchmarkTestnet20Memory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		start := time.Now()
		nt := nodetest.Start(b, 20)
		for k := range 20 {
			nt.WaitFor(30*time.Second, func() bool { return nt.Node(k).DHT().RoutingTable().Size() > 0 }, "node %d routing table", k)
		}
		b.ReportMetric(time.Since(start).Seconds(), "start-s")
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(rssKiB())/1024, "rss-MiB")
		b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
		nt.Close()
	}
}

// rssKiB reads this process's resident set size from /proc.
func rssKiB() int {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}
