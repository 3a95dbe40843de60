package testnet

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/goleak"

	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/rooms"
)

func TestConfig(t *testing.T) {
	c, err := Config{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes != 12 || c.Rate != 100 || c.Size != 1024 || c.Duration != 30*time.Second || c.Mode != InProcess ||
		c.CatchUp != 10_000 || c.BigRoom != 100_000 || c.Burst != 3000 || len(c.Scenarios) != len(Scenarios) {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = Config{Scenarios: []string{"churn,fanout", "all", "churn"}}.WithDefaults()
	if err != nil || strings.Join(c.Scenarios, ",") != "churn,fanout,burst,partition,restart,discovery" {
		t.Fatalf("scenario list: %v %v", c.Scenarios, err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"one node", Config{Nodes: 1}, "at least 2 nodes"},
		{"negative nodes", Config{Nodes: -3}, "at least 2 nodes"},
		{"negative rate", Config{Rate: -1}, "rate must be positive"},
		{"negative size", Config{Size: -1}, "size must be positive"},
		{"huge size", Config{Size: 1 << 20}, "at most"},
		{"negative duration", Config{Duration: -time.Second}, "duration must be positive"},
		{"unknown scenario", Config{Scenarios: []string{"fanout,storm"}}, `no scenario "storm"`},
		{"netem without netns", Config{Delay: time.Millisecond}, "need -netns"},
		{"loss", Config{Mode: Netns, Loss: 100}, "[0, 100)"},
		{"mode", Config{Mode: "cloud"}, "unknown mode"},
		{"repeat without baseline", Config{Repeat: 3, Scenarios: []string{"fanout"}}, "add -baseline"},
		{"repeat without fanout", Config{Repeat: 3, Baseline: true, Scenarios: []string{"burst"}}, "add -baseline and -scenario fanout"},
		{"repeat with other scenarios", Config{Repeat: 3, Baseline: true, Scenarios: []string{"fanout,burst"}}, "fanout (alone)"},
		{"negative repeat", Config{Repeat: -1}, "from 1 to 50"},
	} {
		_, err := tc.cfg.WithDefaults()
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrUsage saying %q", tc.name, err, tc.want)
		}
	}
}

func TestMessagesAndPercentiles(t *testing.T) {
	for _, size := range []int{1, 10, 1024} {
		txt := msgText(42, size)
		if msgIndex(txt) != 42 || (size > 10 && len(txt) != size) {
			t.Fatalf("size %d: %q → %d", size, txt, msgIndex(txt))
		}
	}
	for _, s := range []string{"hello 1 from node 0", "ready", "tn x", ""} {
		if msgIndex(s) != -1 {
			t.Fatalf("%q parsed as a message", s)
		}
	}
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := summarize(ds)
	if l.Count != 100 || l.P50 != 50 || l.P95 != 95 || l.P99 != 99 || l.Max != 100 || l.Min != 1 || l.Mean != 50.5 {
		t.Fatalf("summary: %+v", l)
	}
	if summarize(nil) != nil {
		t.Fatal("summary of nothing")
	}
}

func TestOrder(t *testing.T) {
	es := func(ids ...string) []entry {
		out := make([]entry, len(ids))
		for i, id := range ids {
			out[i] = entry{ID: id}
		}
		return out
	}
	for _, tc := range []struct {
		a, b      []entry
		same, rel bool
	}{
		{es("a", "b", "c"), es("a", "b", "c"), true, true},
		{es("a", "b", "c"), es("a", "c"), false, true},
		{es("a", "x", "c"), es("a", "c", "y"), false, true},
		{es("a", "b", "c"), es("b", "a", "c"), false, false},
		{es("a", "b"), es("c", "b", "a"), false, false},
		{nil, es("a"), false, true},
	} {
		if sameOrder(tc.a, tc.b) != tc.same || sameRelativeOrder(tc.a, tc.b) != tc.rel || sameRelativeOrder(tc.b, tc.a) != tc.rel {
			t.Errorf("%v vs %v: want same %v, relative %v", tc.a, tc.b, tc.same, tc.rel)
		}
	}
}

// TestFailedSaysFailTheRun: Says that returned an error are counted, in
// the JSON too, and fail the scenario though every recorded message was
// delivered.
func TestFailedSaysFailTheRun(t *testing.T) {
	res := ScenarioResult{Name: "fanout", Sent: 8, Expected: 16, Delivered: 16, DeliveryRatio: 1, OrderChecked: true, OrderIdentical: true}
	var st sendStats
	if st.record(&res); res.SaysFailed != 0 || res.failed() != "" || len(res.Notes) != 0 {
		t.Fatalf("no failed Says: %+v, %q", res, res.failed())
	}
	st.fail(errors.New("node 0: disk full"))
	st.fail(errors.New("node 0: closed"))
	st.record(&res)
	if why := res.failed(); res.SaysFailed != 2 || !strings.Contains(why, "2 says failed (first: node 0: disk full)") {
		t.Errorf("says failed %d, failure %q", res.SaysFailed, why)
	}
	raw, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(raw), `"says_failed":2`) {
		t.Errorf("JSON %s, %v", raw, err)
	}
}

func TestWriteSVG(t *testing.T) {
	res := Results{Config: ConfigSummary{Nodes: 3, Mode: InProcess}, Scenarios: []ScenarioResult{
		{Name: "fanout", samples: []time.Duration{time.Millisecond, 2 * time.Millisecond, 40 * time.Millisecond}, Latency: &Latency{P50: 2, P99: 40, Count: 3}},
		{Name: "restart"},
	}, Baseline: &Baseline{NATS: &ScenarioResult{Name: "nats", samples: []time.Duration{300 * time.Microsecond}}}}
	for _, r := range []Results{res, {}} {
		var b bytes.Buffer
		if err := WriteSVG(&b, r); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&b)
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("not XML: %v", err)
			}
		}
	}
}

// TestSmoke runs every scenario and the baselines on 4 in-process nodes,
// briefly, and checks that nothing is lost, the orders agree, the JSON holds
// the percentiles and no goroutine outlives the run.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		// Process-wide workers started once by dependencies, not per node.
		goleak.IgnoreAnyFunction("github.com/ipfs/go-log/v2/writer.(*MirrorWriter).logRoutine"),
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
	var progress bytes.Buffer
	res, err := Run(context.Background(), Config{
		Nodes: 4, Rate: 50, Duration: 500 * time.Millisecond, CatchUp: 300, BigRoom: 500, Burst: 200,
		Baseline: true, Dir: t.TempDir(),
	}, &progress)
	if err != nil || !res.OK {
		t.Fatalf("run: %v, failures %v\n%s", err, res.Failures, progress.String())
	}
	if len(res.Scenarios) != len(Scenarios) {
		t.Fatalf("%d scenario results", len(res.Scenarios))
	}
	for _, s := range res.Scenarios {
		if s.DeliveryRatio != 1 || !s.OrderIdentical || s.Expected == 0 {
			t.Errorf("%s: ratio %v, order %v, expected %d", s.Name, s.DeliveryRatio, s.OrderIdentical, s.Expected)
		}
		if s.Name != "restart" && s.Latency == nil {
			t.Errorf("%s: no latency", s.Name)
		}
	}
	if r := findScenario(res.Scenarios, "restart"); r == nil || r.Metrics["catchup_ms"] <= 0 || r.Metrics["bigroom_open_read_last50_ms"] <= 0 {
		t.Errorf("restart metrics: %+v", r)
	}
	if b := res.Baseline; b == nil || b.GossipSub.DeliveryRatio != 1 || b.GossipSubMesh.DeliveryRatio != 1 || b.NATS.DeliveryRatio != 1 ||
		b.Ratios["p50_vs_gossipsub"] <= 0 || b.Ratios["p50_vs_gossipsub_mesh"] <= 0 {
		t.Errorf("baseline: %+v", b)
	} else if b.GossipSub.Metrics["cpu_us_per_delivery"] <= 0 || b.Parley.Metrics["cpu_us_per_delivery"] <= 0 || b.Ratios["cpu_per_delivery_vs_gossipsub"] <= 0 {
		t.Errorf("CPU per delivery: parley %v, gossipsub %v, ratios %v", b.Parley.Metrics, b.GossipSub.Metrics, b.Ratios)
	}
	// In a half-second run the room's GossipSub mesh may not form in time,
	// and every delivery then comes by sync, which has no stages to break
	// down (rooms' TestTraceStages checks the stages themselves).
	if st := findScenario(res.Scenarios, "fanout").Stages; st != nil && st.Deliveries == 0 && st.BySync > 0 {
		t.Logf("every fanout delivery came by sync (%d): no stages to check", st.BySync)
	} else {
		checkStages(t, st)
		// What came by gossip passed GossipSub's hops, and was shown.
		if h := findScenario(res.Scenarios, "fanout").Hops; h == nil || h.Deliveries == 0 || h.Receive == nil || h.Visible == nil || h.Wire == nil && h.RelayWire == nil {
			t.Errorf("parley hops: %+v", h)
		}
	}
	if b := res.Baseline; b != nil {
		for _, s := range []*ScenarioResult{b.GossipSub, b.GossipSubMesh} {
			if h := s.Hops; h == nil || h.Deliveries == 0 || h.Relayed > h.Deliveries || h.Queued == nil || h.Receive == nil || h.Visible != nil || h.Wire == nil && h.RelayWire == nil {
				t.Errorf("%s hops: %+v", s.Name, h)
			}
		}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Scenarios []struct {
			Name    string `json:"name"`
			Latency *struct {
				P50 float64 `json:"p50_ms"`
				P99 float64 `json:"p99_ms"`
			} `json:"latency"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(raw, &back); err != nil || back.Scenarios[0].Name != "fanout" || back.Scenarios[0].Latency == nil || back.Scenarios[0].Latency.P50 <= 0 {
		t.Fatalf("JSON: %v %s", err, raw)
	}
	if !strings.Contains(progress.String(), "fanout: node 0 says") {
		t.Errorf("no progress lines:\n%s", progress.String())
	}
	if testing.Verbose() {
		os.Stderr.Write(progress.Bytes())
	}
	t.Logf("run done at %v", time.Now())
}

func TestProcsModeNeedsModule(t *testing.T) {
	_, err := Run(context.Background(), Config{Nodes: 2, Mode: Procs, Parley: "/nonexistent/parley"}, nil)
	if !errors.Is(err, ErrEnvironment) || !strings.Contains(err.Error(), "-parley") {
		t.Fatalf("err = %v", err)
	}
}

// TestLacks: a node that misses events is named with the author and the
// seq range it lacks; equal vectors lack nothing.
func TestLacks(t *testing.T) {
	name := func(p string) string { return map[string]string{"A": "node 0", "B": "node 1"}[p] }
	vvs := map[int]map[string]uint64{
		0: {"A": 20, "B": 7},
		1: {"A": 20, "B": 7},
		2: {"A": 14, "B": 7},
		3: {"A": 19},
		4: nil,
	}
	got := lacks(vvs, []int{0, 1, 2, 3, 4}, name)
	want := []string{
		"node 2 lacks 6 events: node 0's seqs 15-20",
		"node 3 lacks 8 events: node 0's seqs 20, node 1's seqs 1-7",
		"node 4: no version vector",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lacks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if l := lacks(map[int]map[string]uint64{0: {"A": 3}, 1: {"A": 3}}, []int{0, 1}, nil); len(l) != 0 {
		t.Fatalf("equal vectors: %v", l)
	}
	vv := vvOf([]entry{{Author: "A", Seq: 1}, {Author: "B", Seq: 1}, {Author: "A", Seq: 2}})
	if vv["A"] != 2 || vv["B"] != 1 || len(vv) != 2 {
		t.Fatalf("vvOf: %v", vv)
	}
}

// checkStages checks a stage breakdown: every stage, in order, with
// non-negative times that grow from stage to stage (durable, beside the
// path, only after published).
func checkStages(t *testing.T, st *Stages) {
	t.Helper()
	if st == nil || st.Deliveries == 0 {
		t.Fatalf("no stage breakdown: %+v", st)
	}
	want := []string{"published", "durable", "validated", "stored", "visible"}
	if len(st.Stages) != len(want) {
		t.Fatalf("stages %+v, want %v", st.Stages, want)
	}
	var prev Latency
	for k, s := range st.Stages {
		if s.Stage != want[k] || s.SinceSend == nil || s.Step == nil || s.SinceSend.Count != st.Deliveries {
			t.Fatalf("stage %d: %+v, want %s over %d deliveries", k, s, want[k], st.Deliveries)
		}
		if s.Step.Min < 0 || s.SinceSend.Min < 0 {
			t.Errorf("%s: negative times: %+v %+v", s.Stage, s.SinceSend, s.Step)
		}
		if s.SinceSend.Min < prev.Min || s.SinceSend.P50 < prev.P50 || s.SinceSend.P99 < prev.P99 || s.SinceSend.Max < prev.Max {
			t.Errorf("%s comes before the stage before it: %+v after %+v", s.Stage, *s.SinceSend, prev)
		}
		if k != offPath {
			prev = *s.SinceSend
		}
	}
}

// TestStageBreakdown feeds a stage log by hand: a delivery by gossip, one
// by anti-entropy, one with a receiver stamp before the sender's publish,
// and one the receiver has not shown yet.
func TestStageBreakdown(t *testing.T) {
	l := newStageLog(3)
	if l.breakdown() != nil {
		t.Fatal("a breakdown of nothing")
	}
	l.trace(0)("", rooms.ID{9}, rooms.StageDurable, time.Now()) // off: dropped
	l.start()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a, b := rooms.ID{1}, rooms.ID{2}
	l.said(0, a, t0)
	l.said(0, b, t0)
	for _, id := range []rooms.ID{a, b} {
		l.trace(0)("", id, rooms.StagePublished, at(3))
		l.trace(0)("", id, rooms.StageDurable, at(4))
		l.trace(0)("", id, rooms.StageVisible, at(3))
	}
	// Node 1: a by gossip; b by gossip, validated before the publish returned.
	l.trace(1)("", a, rooms.StageValidated, at(5))
	l.trace(1)("", a, rooms.StageStored, at(9))
	l.trace(1)("", a, rooms.StageVisible, at(10))
	l.trace(1)("", b, rooms.StageValidated, at(1))
	l.trace(1)("", b, rooms.StageStored, at(4))
	l.trace(1)("", b, rooms.StageVisible, at(4))
	// Node 2: a by sync; b stored but not visible yet.
	l.trace(2)("", a, rooms.StageStored, at(50))
	l.trace(2)("", a, rooms.StageVisible, at(51))
	l.trace(2)("", b, rooms.StageValidated, at(6))
	l.stop()
	l.trace(2)("", b, rooms.StageStored, at(60)) // off: dropped
	st := l.breakdown()
	if st == nil || st.Deliveries != 2 || st.BySync != 1 || st.Clamped != 1 || st.Incomplete != 0 {
		t.Fatalf("breakdown %+v", st)
	}
	checkStages(t, st)
	if v := st.Stages[2].SinceSend.Min; v != 3 {
		t.Errorf("clamped validated stamp: %v ms since the Say, want 3 (the publish)", v)
	}
	if v := st.Stages[4].SinceSend.Max; v != 10 {
		t.Errorf("visible: max %v ms, want 10", v)
	}
}

func TestLinearFit(t *testing.T) {
	slope, icept, r2 := linearFit([]float64{10, 20, 40}, []float64{25, 45, 85})
	if slope != 2 || icept != 5 || r2 != 1 {
		t.Fatalf("fit: slope %v intercept %v r2 %v", slope, icept, r2)
	}
	if s, i, _ := linearFit([]float64{3, 3}, []float64{1, 5}); s != 0 || i != 3 {
		t.Fatalf("one x: slope %v intercept %v", s, i)
	}
	if _, _, r2 := linearFit([]float64{1, 2, 3, 4}, []float64{1, 3, 2, 4}); r2 <= 0 || r2 >= 1 {
		t.Fatalf("noisy r2 %v", r2)
	}
	fits := scaleFits([]ScaleRow{
		{Nodes: 10, Idle: ScaleCost{RSSMiB: 100, PeersPerNode: 9}, Load: ScaleCost{Goroutines: 2000}},
		{Nodes: 20, Idle: ScaleCost{RSSMiB: 200, PeersPerNode: 19}, Load: ScaleCost{Goroutines: 5000}},
	})
	seen := false
	for _, f := range fits {
		switch f.Figure {
		case "loaded goroutines":
			// 200 then 250 a node: 300 more in all for each node (299,000
			// at 1,000 nodes), or 5,150 a node if each node's count keeps
			// rising so.
			seen = true
			if f.Slope != 300 || f.At1000 != 299_000 || f.PerNodeTrendAt1000 != 5150 {
				t.Errorf("loaded goroutines fit %+v", f)
			}
		case "idle RSS":
			if f.Slope != 10 || f.At1000 != 10_000 || f.PerNodeGrowth != 0 {
				t.Errorf("RSS fit %+v", f)
			}
		case "peer connections":
			// 9 then 19 per node: each node's peers grow by 100 per 100 nodes.
			if f.PerNodeGrowth != 100 || f.PerNodeTrendAt1000 != 999 {
				t.Errorf("peers fit %+v", f)
			}
		}
	}
	if !seen {
		t.Error("no fit of the loaded goroutines")
	}
}

func TestScaleGroups(t *testing.T) {
	for _, tc := range []struct {
		n, size int
		want    string
	}{
		{10, 10, "[[0 1 2 3 4 5 6 7 8 9]]"},
		{5, 2, "[[0 1] [2 3 4]]"},
		{7, 3, "[[0 1 2] [3 4 5 6]]"},
		{8, 3, "[[0 1 2] [3 4 5] [6 7]]"},
		{3, 10, "[[0 1 2]]"},
	} {
		if got := fmt.Sprint(scaleGroups(tc.n, tc.size)); got != tc.want {
			t.Errorf("scaleGroups(%d, %d) = %s, want %s", tc.n, tc.size, got, tc.want)
		}
	}
}

func TestPromValuesAndProc(t *testing.T) {
	m := promValues("# HELP go_goroutines x\ngo_goroutines 42\ngo_memstats_heap_inuse_bytes 1.5e+06\nparley_peers_connected{x=\"y\"} 3\n", "go_goroutines", "go_memstats_heap_inuse_bytes", "parley_peers_connected")
	if m["go_goroutines"] != 42 || m["go_memstats_heap_inuse_bytes"] != 1.5e6 || len(m) != 2 {
		t.Fatalf("promValues: %v", m)
	}
	if runtime.GOOS != "linux" {
		return
	}
	u, err := readProc(os.Getpid())
	if err != nil || u.RSS <= 0 || u.RSSAnon <= 0 || u.RSSAnon > u.RSS || u.Threads < 1 {
		t.Fatalf("readProc: %+v, %v", u, err)
	}
}

// TestScaleSmall runs the scale scenario on 2 and 3 nodes with short
// windows: every figure is there, every message delivered.
func TestScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes")
	}
	res, err := Run(context.Background(), Config{Scenarios: []string{"scale"}, Scale: []int{3, 2}, RoomSize: 2, Duration: 500 * time.Millisecond, Dir: t.TempDir()}, nil)
	if err != nil || !res.OK {
		t.Fatalf("run: %v, failures %v", err, res.Failures)
	}
	sr := res.Scenarios[0].Scale
	if sr == nil || len(sr.Rows) != 2 || sr.Rows[0].Nodes != 2 || sr.Rows[1].Rooms != 1 || len(sr.Fits) == 0 {
		t.Fatalf("scale result %+v", sr)
	}
	// The scenario's nodes are its largest N, not -n (which scale does
	// not use).
	if n := res.Scenarios[0].Nodes; n != 3 {
		t.Errorf("scale's nodes %d, want its largest N, 3", n)
	}
	// Scale runs at the node's own anti-entropy period, not the other
	// scenarios' 5 s.
	if sr.SyncIntervalS != rooms.DefaultSyncInterval.Seconds() || res.Config.ScaleSyncInterval != sr.SyncIntervalS || res.Config.SyncInterval != 5 {
		t.Errorf("anti-entropy: scale %vs (config %vs), others %vs", sr.SyncIntervalS, res.Config.ScaleSyncInterval, res.Config.SyncInterval)
	}
	// In one process RSS is the process's minus what it held before the
	// nodes: for two or three small nodes the pages the runtime returns
	// meanwhile can outweigh them (or match them: a delta of 0 came up in
	// CI), so the live heap is what must grow, and RSS must be a number.
	for _, r := range sr.Rows {
		if r.Idle.HeapMiB <= 0 || math.IsNaN(r.Idle.RSSMiB) || math.IsInf(r.Idle.RSSMiB, 0) || r.Idle.GoroutinesPerNode <= 0 || r.Load.CPU <= 0 || r.Expected == 0 || r.Delivered != r.Expected || r.Idle.PeersPerNode < 1 {
			t.Errorf("row %+v", r)
		}
	}
}

// TestMocknetFanout runs fanout on three nodes of the in-memory mocknet
// with 30 ms on every link: nothing is lost and no delivery is quicker than
// the link.
func TestMocknetFanout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes")
	}
	res, err := Run(context.Background(), Config{Nodes: 3, Mode: Mocknet, Delay: 30 * time.Millisecond, Scenarios: []string{"fanout,restart"}, Rate: 20, Duration: 500 * time.Millisecond, Dir: t.TempDir()}, nil)
	if err != nil || !res.OK {
		t.Fatalf("run: %v, failures %v", err, res.Failures)
	}
	f := res.Scenarios[0]
	if f.Delivered != f.Expected || f.Expected == 0 || f.Latency == nil || f.Latency.Min < 30 {
		t.Fatalf("fanout on the mocknet: %d/%d, latency %+v", f.Delivered, f.Expected, f.Latency)
	}
	if res.Scenarios[1].Skipped == "" {
		t.Errorf("restart on the mocknet: %+v", res.Scenarios[1])
	}
}

func TestSoakLayoutAndSlopes(t *testing.T) {
	if got := fmt.Sprint(soakRooms(50, 10)[9]); got != "[45 46 47 48 49 0 1 2 3 4]" {
		t.Errorf("room 9 of 50 nodes in 10 rooms: %s", got)
	}
	in := make(map[int]int)
	for _, room := range soakRooms(50, 10) {
		for _, i := range room {
			in[i]++
		}
	}
	for i := range 50 {
		if in[i] != 2 {
			t.Errorf("node %d is in %d rooms, want 2", i, in[i])
		}
	}
	if got := fmt.Sprint(soakRooms(3, 5)); got != "[[0 1] [0 1] [1 2] [1 2] [2 0]]" {
		t.Errorf("3 nodes in 5 rooms: %s", got)
	}
	sample := func(t float64, rss float64, g int) SoakSample {
		return SoakSample{T: t, RSSMiB: rss + 100, RSSAnonMiB: rss, RSSFileMiB: 100, HeapMiB: rss / 2, Goroutines: g}
	}
	flat := &SoakResult{DurationS: 600}
	growing := &SoakResult{DurationS: 600}
	for k := range 121 {
		ts := float64(k * 5)
		// A warm-up that climbs, then a plateau with noise.
		rss := min(1000, 500+ts*5) + float64(k%3)
		flat.Samples = append(flat.Samples, sample(ts, rss, 5000+k%7))
		growing.Samples = append(growing.Samples, sample(ts, 1000+ts, 5000+k))
	}
	// File-backed RSS that grows with the data written does not make a run
	// with flat anonymous RSS grow.
	for k := range flat.Samples {
		flat.Samples[k].RSSFileMiB += flat.Samples[k].T
		flat.Samples[k].RSSMiB += flat.Samples[k].T
	}
	soakSlopes(flat)
	soakSlopes(growing)
	if !flat.Flat || math.Abs(flat.RSSAnonMiBPerMin) > 1 || math.Abs(flat.GoroutinesPerMin) > 1 {
		t.Errorf("flat run: %+v", flat)
	}
	if growing.Flat || math.Abs(growing.RSSAnonMiBPerMin-60) > 0.01 || math.Abs(growing.GoroutinesPerMin-12) > 0.01 {
		t.Errorf("growing run: flat %v, anonymous RSS %v MiB/min, goroutines %v/min", growing.Flat, growing.RSSAnonMiBPerMin, growing.GoroutinesPerMin)
	}
	// Whether a soak fails: the live heap and the goroutines decide;
	// anonymous RSS that grows alone is NOT FLAT but passes.
	fails := func(sr *SoakResult) string {
		res := ScenarioResult{Name: "soak", Sent: 10, Expected: 10, Delivered: 10, DeliveryRatio: 1, OrderChecked: true, OrderIdentical: true, Soak: sr}
		return res.failed()
	}
	if why := fails(flat); why != "" || !flat.HeapFlat || !flat.GoroutinesFlat || !flat.RSSAnonFlat {
		t.Errorf("flat run fails: %q", why)
	}
	if why := fails(growing); !strings.Contains(why, "live heap NOT FLAT") || !growing.GoroutinesFlat {
		t.Errorf("growing run: %q", why)
	}
	rssOnly, heapOnly, goroutinesOnly := &SoakResult{DurationS: 600}, &SoakResult{DurationS: 600}, &SoakResult{DurationS: 600}
	for k := range 121 {
		ts := float64(k * 5)
		smp := sample(ts, 1000, 5000)
		smp.RSSAnonMiB += ts // +60 MiB/min: 30 % over the second half
		rssOnly.Samples = append(rssOnly.Samples, smp)
		smp = sample(ts, 1000, 5000)
		smp.HeapMiB += ts / 10 // +6 MiB/min of 545: 5.5 % over the second half
		heapOnly.Samples = append(heapOnly.Samples, smp)
		smp = sample(ts, 1000, 5000+k) // 12 a minute of 5,000: 1.2 %
		if ts >= 300 {
			smp.Goroutines += k // 24 a minute: 2.4 %
		}
		goroutinesOnly.Samples = append(goroutinesOnly.Samples, smp)
	}
	for _, sr := range []*SoakResult{rssOnly, heapOnly, goroutinesOnly} {
		soakSlopes(sr)
	}
	if why := fails(rssOnly); rssOnly.Flat || rssOnly.RSSAnonFlat || !rssOnly.HeapFlat || why != "" || !strings.Contains(rssOnly.growth(), "anonymous RSS NOT FLAT") {
		t.Errorf("anonymous RSS alone: flat %v, fails %q, %s", rssOnly.Flat, why, rssOnly.growth())
	}
	if why := fails(heapOnly); heapOnly.Flat || heapOnly.HeapFlat || !heapOnly.RSSAnonFlat || !strings.Contains(why, "live heap NOT FLAT (grew 5.5%") {
		t.Errorf("live heap alone: flat %v, fails %q", heapOnly.Flat, why)
	}
	if why := fails(goroutinesOnly); goroutinesOnly.GoroutinesFlat || !goroutinesOnly.HeapFlat || !strings.Contains(why, "goroutines NOT FLAT") {
		t.Errorf("goroutines alone: %+v, fails %q", goroutinesOnly, why)
	}
	// Goroutines that step up for the last minute (a periodic task's
	// streams) do not make a flat run grow.
	stepped := &SoakResult{DurationS: 600}
	for k := range 121 {
		g := 5000
		if k >= 110 {
			g = 5200
		}
		stepped.Samples = append(stepped.Samples, sample(float64(k*5), 1000, g))
	}
	if soakSlopes(stepped); !stepped.Flat || stepped.GoroutinesPerMin != 0 {
		t.Errorf("a step in the last minute: flat %v, %v goroutines/min", stepped.Flat, stepped.GoroutinesPerMin)
	}
	short := &SoakResult{DurationS: 10, Samples: []SoakSample{sample(9, 1, 1)}}
	if soakSlopes(short); short.Flat || !strings.Contains(short.FlatRule, "too few samples") || !strings.Contains(fails(short), "too few samples") {
		t.Errorf("two samples: %+v, fails %q", short, fails(short))
	}
}

func TestHistogram(t *testing.T) {
	h := newHistogram()
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	l := h.summary()
	if l.Count != 1000 || l.Min != 1 || l.Max != 1000 || l.Mean != 500.5 {
		t.Fatalf("summary %+v", l)
	}
	for _, c := range []struct{ got, want float64 }{{l.P50, 500}, {l.P99, 990}, {l.P999, 999}} {
		if c.got < c.want || c.got > c.want*1.021 {
			t.Errorf("quantile %v, want %v within 2%%", c.got, c.want)
		}
	}
	o := newHistogram()
	o.add(0)
	o.add(time.Hour)
	h.merge(o)
	if l := h.summary(); l.Count != 1002 || l.Min != 0 || l.Max != 3600000 {
		t.Errorf("merged %+v", l)
	}
	if newHistogram().summary() != nil {
		t.Error("summary of nothing")
	}
}

// TestSoakShort runs the soak scenario briefly on six nodes in three
// rooms: every message delivered in one order, samples and slopes there.
// (Not their values: after other tests, and with the race detector's
// shadow memory, the process's RSS may fall below its baseline.)
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes")
	}
	res, err := Run(context.Background(), Config{Scenarios: []string{"soak"}, Nodes: 6, Rooms: 3, Rate: 30, Duration: 3 * time.Second, Dir: t.TempDir()}, nil)
	if err != nil || len(res.Scenarios) != 1 {
		t.Fatalf("run: %v", err)
	}
	s := res.Scenarios[0]
	if s.Expected == 0 || s.Delivered != s.Expected || !s.OrderIdentical || s.Latency == nil {
		t.Fatalf("soak: %d/%d, order %v, latency %+v, notes %v", s.Delivered, s.Expected, s.OrderIdentical, s.Latency, s.Notes)
	}
	sr := s.Soak
	if sr == nil || sr.Rooms != 3 || sr.RoomSize != 4 || len(sr.Samples) < 10 || sr.FlatRule == "" || sr.MeanGoroutines <= 0 || sr.SayLatency == nil {
		t.Fatalf("soak result %+v", sr)
	}
	// Each delivery is counted in at most one interval; those after
	// the last sample in none.
	var counted int64
	for _, smp := range sr.Samples {
		counted += smp.Deliveries
		if smp.Deliveries > 0 && (smp.DeliveryP50Ms <= 0 || smp.DeliveryP99Ms < smp.DeliveryP50Ms) {
			t.Errorf("sample %+v", smp)
		}
	}
	if counted == 0 || counted > int64(s.Delivered) {
		t.Errorf("intervals counted %d deliveries of %d", counted, s.Delivered)
	}
}

// TestWindowTakesEachOnce: latencies added while takes run are each in
// exactly one take.
func TestWindowTakesEachOnce(t *testing.T) {
	w := newWindow()
	const writers, each = 4, 5000
	done := make(chan struct{})
	for range writers {
		go func() {
			for i := range each {
				w.add(time.Duration(i) * time.Microsecond)
			}
			done <- struct{}{}
		}()
	}
	var taken int64
	for finished := 0; finished < writers; {
		select {
		case <-done:
			finished++
		default:
			taken += w.take().n
		}
	}
	taken += w.take().n
	if taken != writers*each {
		t.Fatalf("took %d latencies, added %d", taken, writers*each)
	}
	if n := w.take().n; n != 0 {
		t.Fatalf("an empty window held %d", n)
	}
}

// TestFollowCountsItsGoroutines: the goroutines an in-process
// subscription starts are the ones counted as the testnet's (and taken
// off the nodes' in the scale scenario), and the count falls back as they
// end.
func TestFollowCountsItsGoroutines(t *testing.T) {
	var g goroutines
	// The goroutines goroutines.start runs, in the whole process (other
	// tests' nodes may still be ending theirs: they are waited out).
	live := func() int {
		buf := make([]byte, 8<<20)
		n := runtime.Stack(buf, true)
		return strings.Count(string(buf[:n]), ".(*goroutines).start.func1(")
	}
	const subs = 3
	chs := make([]chan rooms.View, subs)
	got := make(chan string, subs)
	for k := range chs {
		chs[k] = make(chan rooms.View)
		follow(&g, chs[k], func(text string, _ time.Time) { got <- text })
	}
	// Wait for the process to run exactly the goroutines counted.
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: counted %d, running %d", what, g.count(), live())
			}
			runtime.Gosched()
		}
	}
	wait("started", func() bool { return g.count() > 0 && live() == g.count() })
	if g.count()%subs != 0 {
		t.Errorf("%d goroutines for %d subscriptions", g.count(), subs)
	}
	buf := make([]byte, 8<<20)
	if n := runtime.Stack(buf, true); strings.Contains(string(buf[:n]), "created by github.com/parley-mesh/parley/cmd-testnet/testnet.follow") {
		t.Error("follow starts a goroutine that is not counted")
	}
	chs[0] <- rooms.View{Text: "tn 1"}
	if text := <-got; text != "tn 1" {
		t.Errorf("followed %q", text)
	}
	for _, ch := range chs {
		close(ch)
	}
	wait("ended", func() bool { return g.count() == 0 && live() == 0 })
}

func TestScaleFitPerPeer(t *testing.T) {
	// 40 MiB a node alone, 0.25 MiB per peer, full mesh.
	var rows []ScaleRow
	for _, n := range []int{10, 20, 50} {
		p := float64(n - 1)
		rows = append(rows, ScaleRow{Nodes: n, Idle: ScaleCost{RSSMiB: float64(n) * (40 + 0.25*p), PeersPerNode: p}})
	}
	for _, f := range scaleFits(rows) {
		if f.Figure == "idle RSS" && (math.Abs(f.PerPeer-0.25) > 1e-6 || math.Abs(f.AtNoPeers-40) > 1e-6 || math.Abs(f.PerNodeAtCap-88) > 1e-6 || f.ConnCap != 192) {
			t.Errorf("per-peer fit %+v", f)
		}
		if f.Figure == "peer connections" && f.ConnCap != 0 {
			t.Errorf("peers fitted against peers: %+v", f)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Spread
	}{
		{[]float64{3}, Spread{3, 3, 3, 1}},
		{[]float64{5, 1, 3}, Spread{1, 3, 5, 3}},
		{[]float64{4, 1, 2, 8}, Spread{1, 3, 8, 4}},
	} {
		in := slices.Clone(tc.in)
		if got := spreadOf(in); got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("spreadOf sorted its argument: %v", in)
		}
	}
}

// TestRepeatRounds: -repeat 2 runs Parley's fanout and its baselines twice;
// the first round is the run's baseline, and the summary spreads both.
func TestRepeatRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes")
	}
	var progress bytes.Buffer
	res, err := Run(context.Background(), Config{
		Nodes: 3, Rate: 50, Duration: 400 * time.Millisecond, Scenarios: []string{"fanout"},
		Baseline: true, Repeat: 2, Dir: t.TempDir(),
	}, &progress)
	if err != nil || !res.OK {
		t.Fatalf("run: %v, failures %v\n%s", err, res.Failures, progress.String())
	}
	if len(res.Rounds) != 2 || res.Rounds[0] != res.Baseline || res.Config.Repeat != 2 {
		t.Fatalf("%d rounds, first is the baseline: %v, config repeat %d", len(res.Rounds), len(res.Rounds) > 0 && res.Rounds[0] == res.Baseline, res.Config.Repeat)
	}
	for i, b := range res.Rounds {
		if b.Parley == nil || b.Parley.ElapsedS <= 0 {
			t.Errorf("round %d: no Parley result, or no time: %+v", i+1, b.Parley)
			continue
		}
		if b.Parley == nil || b.Parley.Delivered != b.Parley.Expected || b.Parley.Expected == 0 || b.GossipSub.DeliveryRatio != 1 {
			t.Errorf("round %d: parley %+v, gossipsub ratio %v", i+1, b.Parley, b.GossipSub.DeliveryRatio)
		}
	}
	if res.Rounds[0].Parley == res.Rounds[1].Parley {
		t.Error("both rounds hold the same Parley result")
	}
	sum := res.RoundSummary
	if sum == nil || sum.Rounds != 2 {
		t.Fatalf("summary: %+v", sum)
	}
	for _, k := range []string{"parley_p50_ms", "gossipsub_p50_ms", "gossipsub_mesh_p99_ms", "nats_p50_ms", "parley_cpu_us_per_delivery"} {
		s, ok := sum.Figures[k]
		if !ok || s.N != 2 || s.Min <= 0 || s.Min > s.Median || s.Median > s.Max {
			t.Errorf("figure %s: %+v", k, s)
		}
	}
	p50 := []float64{res.Rounds[0].Ratios["p50_vs_gossipsub"], res.Rounds[1].Ratios["p50_vs_gossipsub"]}
	if s := sum.Ratios["p50_vs_gossipsub"]; s.N != 2 || s.Min != min(p50[0], p50[1]) || s.Max != max(p50[0], p50[1]) {
		t.Errorf("p50 ratio spread %+v of %v", s, p50)
	}
	met := 0
	for _, b := range res.Rounds {
		if b.Targets["p50 <= 2ms"] {
			met++
		}
	}
	if got, ok := sum.TargetsMet["p50 <= 2ms"]; !ok || got != met {
		t.Errorf("p50 <= 2ms met in %d (present %v), want %d", got, ok, met)
	}
}

// TestPromHistogramReadsStoreTimings: the flush timings read from a node's
// metrics text (-procs) are those the database counted (in-process).
func TestPromHistogramReadsStoreTimings(t *testing.T) {
	db, err := store.OpenConfig(store.Config{Dir: t.TempDir(), MinFree: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 5 {
		if err := db.Apply([]schema.Op{{Key: []byte(fmt.Sprint("k", i)), Val: []byte("v")}}, true); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	for _, c := range db.Collectors() {
		reg.MustRegister(c)
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got, n := promHistogram(rec.Body.String(), "parley_store_flush_seconds", store.FlushBuckets)
	want := db.Timings().Flush
	if n != 5 || n != want.Count || !slices.Equal(got, want.Cumulative) {
		t.Fatalf("read %d flushes %v from the text, the database counted %d %v", n, got, want.Count, want.Cumulative)
	}
	var now storeTimes
	now.add(db.Timings())
	if p99, m := timingQuantile(now.Flush, nil, 0.99); m != 5 || p99 <= 0 || math.IsInf(p99, 1) {
		t.Fatalf("p99 %v of %d flushes", p99, m)
	}
	if _, m := timingQuantile(now.Write, now.Write, 0.99); m != 0 {
		t.Fatalf("%d writes between a sample and itself", m)
	}
	var none storeTimes
	none.add(store.Timings{Flush: store.Timing{Cumulative: make([]uint64, len(store.FlushBuckets))}})
	if _, m := timingQuantile(none.Flush, now.Flush, 0.99); m != 0 {
		t.Fatalf("%d flushes counted when the counts went down (a node restarted)", m)
	}
}

// TestStaggeredMemTable: up to 64 nodes get different memtable sizes
// from 3 to 5 MiB.
func TestStaggeredMemTable(t *testing.T) {
	seen := map[int64]bool{}
	for i := range 64 {
		s := staggeredMemTable(i)
		if s < 3<<20 || s >= 5<<20 || seen[s] {
			t.Fatalf("node %d: %d bytes (seen: %v)", i, s, seen[s])
		}
		seen[s] = true
	}
}
