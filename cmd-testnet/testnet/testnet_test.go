package testnet

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

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
	if b := res.Baseline; b == nil || b.GossipSub.DeliveryRatio != 1 || b.NATS.DeliveryRatio != 1 || b.Ratios["p50_vs_gossipsub"] <= 0 {
		t.Errorf("baseline: %+v", b)
	} else if b.GossipSub.Metrics["cpu_us_per_delivery"] <= 0 || b.Parley.Metrics["cpu_us_per_delivery"] <= 0 || b.Ratios["cpu_per_delivery_vs_gossipsub"] <= 0 {
		t.Errorf("CPU per delivery: parley %v, gossipsub %v, ratios %v", b.Parley.Metrics, b.GossipSub.Metrics, b.Ratios)
	}
	checkStages(t, findScenario(res.Scenarios, "fanout").Stages)
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
