package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
)

// benchNode starts `parley up` on a fresh home for a benchmark and returns
// its process and first listen address.
func benchNode(b *testing.B, home string) (*exec.Cmd, string) {
	b.Helper()
	// The flow is one agent's: no limit on its posts a minute.
	if err := os.MkdirAll(home, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config"), []byte("agent_post_limit = none\nmdns = false\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(parleyBin, "--home", home, "up", "--no-mdns", "--listen", "/ip4/127.0.0.1/tcp/0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err == nil {
			cmd.Wait() //nolint:errcheck // stopping
		}
	})
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "parley ready ") {
		b.Fatalf("parley up: %q", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	m := regexp.MustCompile(`addrs=(\S+)`).FindStringSubmatch(sc.Text())
	return cmd, strings.Split(m[1], ",")[0]
}

// rssKiB reads a process's resident set size.
func rssKiB(pid int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// BenchmarkDashboardFlow measures the dashboard with a page open in headless
// Chromium while another node posts 100 messages a second into a room the
// node is in, b.N messages in all: the delay from a message's time to the
// page (p50, p99, max), the page's weight, and the node's resident memory
// (max while it ran). For the figures, a node as users run it (no -race),
// for ten minutes:
//
//	go build -o /tmp/parley ./cmd/parley
//	PARLEY_TEST_BIN=/tmp/parley go test -run '^$' -bench DashboardFlow -benchtime 60000x -timeout 20m ./cmd/parley
func BenchmarkDashboardFlow(b *testing.B) {
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		b.Skip("no chromium")
	}
	dir := b.TempDir()
	h0, h1 := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	p0, _ := benchNode(b, h0)
	_, addr1 := benchNode(b, h1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	c0, c1 := localapi.NewClient(filepath.Join(h0, "parley.sock")), localapi.NewClient(filepath.Join(h1, "parley.sock"))
	defer c0.Close()
	defer c1.Close()
	id1 := addr1[strings.LastIndex(addr1, "/")+1:]
	id0, err := c0.ID(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c0.ContactRequest(ctx, addr1, ""); err != nil {
		b.Fatal(err)
	}
	var reqID string
	benchPoll(b, 30*time.Second, "the contact request on node b", func() bool {
		es, err := c1.Contacts(ctx)
		if err == nil && len(es) == 1 && es[0].State == "pending-in" {
			reqID = es[0].ID
		}
		return reqID != ""
	})
	if _, err := c1.ContactApprove(ctx, reqID, ""); err != nil {
		b.Fatal(err)
	}
	room, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "flow", Members: []string{id0.PeerID}})
	if err != nil || len(room.Invited) != 1 {
		b.Fatalf("open room: %+v %v (%s)", room, err, id1)
	}
	info, err := c0.UI(ctx)
	if err != nil {
		b.Fatal(err)
	}

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chrome),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(b.TempDir()))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	resp, err := chromedp.Run(bctx, chromedp.NavigateResponse(info.URL))
	if err != nil {
		b.Fatal(err)
	}
	if resp.Status != 200 {
		b.Fatalf("page: %v", resp.Status)
	}
	// Live, the page is at /ui/page (it loads itself again there, its token
	// kept in the tab), which it fetches without the token.
	benchPoll(b, 30*time.Second, "the page to go live", func() bool {
		live, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("status").textContent === "live"`))
		return err == nil && live
	})
	pageBytes, err := chromedp.Run(bctx, chromedp.Evaluate[int](`fetch(location.href).then(r => r.arrayBuffer()).then(b => b.byteLength)`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.Fatalf("page: %v", err)
	}

	// Memory of node a, sampled while the messages flow.
	var maxRSS atomic.Int64
	stopRSS := make(chan struct{})
	var rssWG sync.WaitGroup
	rssWG.Add(1)
	go func() {
		defer rssWG.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if r := int64(rssKiB(p0.Process.Pid)); r > maxRSS.Load() {
				maxRSS.Store(r)
			}
			select {
			case <-stopRSS:
				return
			case <-t.C:
			}
		}
	}()

	b.ResetTimer()
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond) // 100 messages a second
	var next atomic.Int64
	var wg sync.WaitGroup
	// Enough senders that a slow Say (fsync, a loaded machine) does not
	// hold the rate under 100 a second.
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if _, err := c1.Say(ctx, "bob", localapi.SayRequest{Room: room.RoomID, Text: fmt.Sprintf("message %d of the flow", i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	tick.Stop()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	// Wait for the page to have the last messages.
	benchPoll(b, time.Minute, "the page to get every message", func() bool {
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`window.parley.latN`))
		return err == nil && n >= b.N
	})
	b.StopTimer()
	close(stopRSS)
	rssWG.Wait()
	lat, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](`window.parley.lat.slice()`))
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
	b.ReportMetric(float64(maxRSS.Load())/1024, "node-max-RSS-MiB")
	b.ReportMetric(float64(pageBytes), "page-bytes")
}

// benchPoll polls cond every 50 ms until it holds, or fails after timeout.
func benchPoll(b *testing.B, timeout time.Duration, what string, cond func() bool) {
	b.Helper()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-t.C:
		case <-deadline:
			b.Fatalf("timed out waiting for %s", what)
		}
	}
}
