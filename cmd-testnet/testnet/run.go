package testnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// Run runs the configured scenarios and returns their results. It writes
// progress lines to progress (nil discards them). The error is non-nil when
// the run could not be carried out (bad configuration, a node that failed to
// start, a missing tool, ctx ended); a scenario that loses messages or
// diverges is reported in the Results (OK false), not as an error.
func Run(ctx context.Context, cfg Config, progress io.Writer) (Results, error) {
	res := Results{Started: time.Now().UTC(), Machine: Machine{CPUs: runtime.NumCPU(), Procs: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}}
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return res, err
	}
	res.Config = ConfigSummary{
		Nodes: cfg.Nodes, Scenarios: cfg.Scenarios, Rate: cfg.Rate, Size: cfg.Size, Duration: cfg.Duration.Seconds(),
		Mode: cfg.Mode, Delay: ms(cfg.Delay), Loss: cfg.Loss, CatchUp: cfg.CatchUp, BigRoom: cfg.BigRoom, Burst: cfg.Burst,
		Baseline: cfg.Baseline, SyncInterval: cfg.SyncInterval.Seconds(),
	}
	if !cfg.inProcess() {
		res.Config.SyncInterval = rooms.DefaultSyncInterval.Seconds()
	}
	if cfg.Repeat > 1 {
		res.Config.Repeat = cfg.Repeat
	}
	if slices.Contains(cfg.Scenarios, "scale") {
		res.Config.Scale = cfg.Scale
		res.Config.ScaleSyncInterval = rooms.DefaultSyncInterval.Seconds()
		if cfg.inProcess() && cfg.ScaleSyncInterval > 0 {
			res.Config.ScaleSyncInterval = cfg.ScaleSyncInterval.Seconds()
		}
	}
	r := &runner{cfg: cfg, p: newProgress(progress)}
	// CPU profiles (-cpuprofile) tell the systems apart by this label
	// (go tool pprof -tagfocus system=parley); goroutines inherit it.
	ctx = pprof.WithLabels(ctx, pprof.Labels("system", "parley"))
	pprof.SetGoroutineLabels(ctx)
	defer pprof.SetGoroutineLabels(context.Background())
	dir := cfg.Dir
	if dir == "" {
		var done func()
		dir, done, err = makeRunDir()
		if err != nil {
			return res, fmt.Errorf("%w: temporary folder: %v", ErrEnvironment, err)
		}
		defer done()
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, fmt.Errorf("%w: %v", ErrEnvironment, err)
	}
	r.dir = dir
	if err := r.prepare(ctx); err != nil {
		return res, err
	}

	r.p.printf("%d nodes (%s), scenarios %v, %d msg/s of %d B for %v each", cfg.Nodes, cfg.Mode, cfg.Scenarios, cfg.Rate, cfg.Size, cfg.Duration)
	var runErr error
	for _, name := range cfg.Scenarios {
		if ctx.Err() != nil {
			runErr = ctx.Err()
			break
		}
		r.p.scenario(name)
		sr, err := r.timedScenario(ctx, name)
		if err != nil {
			if errors.Is(err, ErrNodeStart) || errors.Is(err, ErrEnvironment) || ctx.Err() != nil {
				sr.Error = err.Error()
				res.Scenarios = append(res.Scenarios, sr)
				runErr = fmt.Errorf("%s: %w", name, err)
				r.p.printf("stopped: %v", err)
				break
			}
			if errors.Is(err, ErrUnsupported) {
				sr.Skipped = err.Error()
			} else {
				sr.Error = err.Error()
			}
		}
		res.Scenarios = append(res.Scenarios, sr)
		r.p.printf("%s", summaryLine(&sr))
	}
	r.p.scenario("")
	if runErr == nil && cfg.Baseline {
		r.p.scenario("baseline")
		b, err := r.baseline(ctx, findScenario(res.Scenarios, "fanout"))
		if err != nil {
			runErr = fmt.Errorf("baseline: %w", err)
		}
		res.Baseline = b
		r.p.scenario("")
		if runErr == nil && cfg.Repeat > 1 {
			if err := r.rounds(ctx, &res); err != nil {
				runErr = err
			}
		}
	}
	ran := 0
	for i := range res.Scenarios {
		if res.Scenarios[i].Skipped == "" {
			ran++
		}
		if why := res.Scenarios[i].failed(); why != "" {
			res.Failures = append(res.Failures, why)
		}
	}
	if ran == 0 && runErr == nil {
		// Every scenario asked for was skipped in this mode: nothing was
		// checked, and that is no pass.
		res.Failures = append(res.Failures, fmt.Sprintf("no scenario ran: %s cannot run in the %s mode", strings.Join(cfg.Scenarios, ", "), cfg.Mode))
	}
	res.OK = runErr == nil && len(res.Failures) == 0
	res.Elapsed = round3(time.Since(res.Started).Seconds())
	return res, runErr
}

func findScenario(rs []ScenarioResult, name string) *ScenarioResult {
	for i := range rs {
		if rs[i].Name == name && rs[i].Error == "" && rs[i].Skipped == "" {
			return &rs[i]
		}
	}
	return nil
}

func summaryLine(s *ScenarioResult) string {
	switch {
	case s.Skipped != "":
		return "skipped: " + s.Skipped
	case s.Error != "":
		return "FAILED: " + s.Error
	}
	line := fmt.Sprintf("done in %.1fs: delivered %d/%d (%.4f)", s.ElapsedS, s.Delivered, s.Expected, s.DeliveryRatio)
	if s.SaysFailed > 0 {
		line += fmt.Sprintf(", %d SAYS FAILED", s.SaysFailed)
	}
	if s.OrderChecked {
		if s.OrderIdentical {
			line += ", order identical"
		} else {
			line += ", ORDER DIVERGES"
		}
	}
	if s.Latency != nil {
		line += fmt.Sprintf(", p50 %.2fms p99 %.2fms", s.Latency.P50, s.Latency.P99)
	}
	if s.Soak != nil && !s.Soak.Flat {
		line += ", NOT FLAT: " + s.Soak.growth()
	}
	return line
}

// runner carries a run's state.
type runner struct {
	cfg Config
	p   *progress
	dir string
	seq int // scenario instances started, for folder names
	// inScale is set while the scale scenario runs: its nodes get
	// Config.ScaleSyncInterval.
	inScale bool

	bin string // parley binary (procs, netns)
}

// prepare checks the environment of the mode and builds what it needs.
func (r *runner) prepare(ctx context.Context) error {
	switch r.cfg.Mode {
	case Procs, Netns:
		if r.cfg.Mode == Netns {
			if err := checkNetns(r.cfg); err != nil {
				return err
			}
		}
		bin, err := r.parleyBinary(ctx)
		if err != nil {
			return err
		}
		r.bin = bin
	}
	return nil
}

// start starts a fresh cluster of n nodes for a scenario.
func (r *runner) start(ctx context.Context, n int) (cluster, error) {
	r.seq++
	dir := filepath.Join(r.dir, fmt.Sprintf("s%d", r.seq))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEnvironment, err)
	}
	r.p.printf("starting %d nodes", n)
	t0 := time.Now()
	var c cluster
	var err error
	logf := func(format string, args ...any) {
		if r.cfg.Verbose {
			r.p.printf(format, args...)
		}
	}
	switch r.cfg.Mode {
	case InProcess:
		c, err = startInproc(n, dir, r.inprocSync(), logf)
	case Mocknet:
		c, err = startInproc(n, dir, r.inprocSync(), logf, nodetest.WithMocknet(r.cfg.Delay))
	case Procs:
		c, err = startProcs(ctx, procsConfig{bin: r.bin, n: n, dir: dir, logf: logf, progress: r.p})
	case Netns:
		c, err = startNetns(ctx, r.cfg, procsConfig{bin: r.bin, n: n, dir: dir, logf: logf, progress: r.p})
	}
	if err != nil {
		return nil, err
	}
	r.p.printf("%d nodes up in %.1fs", n, time.Since(t0).Seconds())
	return c, nil
}

// scenario runs one scenario on a fresh cluster.
func (r *runner) scenario(ctx context.Context, name string) (ScenarioResult, error) {
	switch {
	case name == "partition" && r.cfg.Mode == Procs:
		return ScenarioResult{}, fmt.Errorf("%w: partitions need the in-process or -netns mode (processes on 127.0.0.1 share one network)", ErrUnsupported)
	case r.cfg.Mode == Mocknet && (name == "partition" || name == "restart" || name == "churn"):
		return ScenarioResult{}, fmt.Errorf("%w: the mocknet neither partitions nor restarts nodes (use the in-process or -netns mode)", ErrUnsupported)
	case name == "discovery" && r.cfg.Mode != InProcess && r.cfg.Mode != Mocknet:
		return ScenarioResult{}, fmt.Errorf("%w: discovery needs the in-process mode (the local API does not expose DHT lookups)", ErrUnsupported)
	}
	switch name {
	case "fanout":
		return r.fanout(ctx)
	case "burst":
		return r.burst(ctx)
	case "partition":
		return r.partition(ctx)
	case "restart":
		return r.restart(ctx)
	case "churn":
		return r.churn(ctx)
	case "discovery":
		return r.discovery(ctx)
	case "scale":
		return r.scale(ctx)
	case "soak":
		return r.soak(ctx)
	}
	return ScenarioResult{}, fmt.Errorf("%w: no scenario %q", ErrUsage, name)
}

// timedScenario runs scenario name and names and times its result.
func (r *runner) timedScenario(ctx context.Context, name string) (ScenarioResult, error) {
	start := time.Now()
	sr, err := r.scenario(ctx, name)
	sr.Name = name
	if sr.Nodes == 0 {
		// Scale sets its own: its largest N.
		sr.Nodes = r.cfg.Nodes
	}
	sr.ElapsedS = round3(time.Since(start).Seconds())
	return sr, err
}

// poll calls cond until it holds (nil), ctx ends or timeout passes (an
// error saying what was awaited). The pause between calls grows from 2 ms
// to 50 ms, so that long waits do not load the nodes they watch.
func poll(ctx context.Context, timeout time.Duration, cond func() bool, what string) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pause := 2 * time.Millisecond
	t := time.NewTimer(pause)
	defer t.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			if cond() {
				return nil
			}
			if err := parent.Err(); err != nil {
				// The run ended (SIGINT, SIGTERM), not the wait.
				return fmt.Errorf("%w while waiting for %s", err, what)
			}
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
		t.Reset(pause)
	}
}

// converge waits until the listed nodes hold the same events of room, at
// least least of them: every node's version vector equals the element-wise
// maximum of theirs (so each holds everything any of them holds, the
// senders' events included). Counts are compared first, as they are cheap;
// the vectors are the evidence. On a timeout the error says which node lacks
// which events (author, seq range).
func (r *runner) converge(ctx context.Context, c cluster, room string, least uint64, nodes []int, timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	counts := make([]uint64, len(nodes))
	var mu sync.Mutex // protects counts for the status line
	stop := r.p.every(ctx, 2*time.Second, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("waiting for %d nodes to hold the same %d+ events: min %d, max %d", len(nodes), least, slices.Min(counts), slices.Max(counts))
	})
	defer stop()
	err := poll(ctx, timeout, func() bool {
		for k, i := range nodes {
			n, err := c.Count(ctx, i, room)
			if err != nil {
				n = 0
			}
			mu.Lock()
			counts[k] = n
			mu.Unlock()
		}
		mu.Lock()
		same := slices.Min(counts) >= least && slices.Min(counts) == slices.Max(counts)
		mu.Unlock()
		if !same {
			return false
		}
		return len(lacks(vectors(ctx, c, room, nodes), nodes, nil)) == 0
	}, fmt.Sprintf("the same %d+ events on nodes %v", least, nodes))
	if err != nil {
		mu.Lock()
		err = fmt.Errorf("%w (counts %v)", err, counts)
		mu.Unlock()
		if l := lacks(vectors(ctx, c, room, nodes), nodes, namer(c)); len(l) > 0 {
			err = fmt.Errorf("%w; %s", err, strings.Join(l, "; "))
		}
	}
	return time.Since(t0), err
}

// vectors reads the version vectors of the listed nodes (nil for a node
// that cannot say).
func vectors(ctx context.Context, c cluster, room string, nodes []int) map[int]map[string]uint64 {
	out := make(map[int]map[string]uint64, len(nodes))
	for _, i := range nodes {
		vv, err := c.VV(ctx, i, room)
		if err != nil {
			vv = nil
		}
		out[i] = vv
	}
	return out
}

// vvOf is the version vector of a whole log.
func vvOf(log []entry) map[string]uint64 {
	vv := make(map[string]uint64)
	for _, e := range log {
		if e.Author != "" {
			vv[e.Author] = max(vv[e.Author], e.Seq)
		}
	}
	return vv
}

// namer names the cluster's nodes by their peer IDs: "node 2".
func namer(c cluster) func(string) string {
	names := make(map[string]string, c.Len())
	for i := range c.Len() {
		names[c.PeerID(i)] = fmt.Sprintf("node %d", i)
	}
	return func(p string) string {
		if n, ok := names[p]; ok {
			return n
		}
		return shortPeer(p)
	}
}

// lacks compares the nodes' version vectors with their element-wise maximum
// and says, for each node that lacks events, which: "node 3 lacks 5 events:
// node 0's seqs 15-19". name names an author (nil: the end of its peer ID).
// It returns nothing when every node holds the same.
func lacks(vvs map[int]map[string]uint64, nodes []int, name func(string) string) []string {
	if name == nil {
		name = shortPeer
	}
	top := make(map[string]uint64)
	for _, vv := range vvs {
		for a, s := range vv {
			top[a] = max(top[a], s)
		}
	}
	authors := make([]string, 0, len(top))
	for a := range top {
		authors = append(authors, a)
	}
	slices.Sort(authors)
	var out []string
	for _, i := range nodes {
		vv := vvs[i]
		var missing uint64
		var runs []string
		for _, a := range authors {
			if have := vv[a]; have < top[a] {
				missing += top[a] - have
				runs = append(runs, fmt.Sprintf("%s's seqs %s", name(a), seqRange(have+1, top[a])))
			}
		}
		switch {
		case vv == nil:
			out = append(out, fmt.Sprintf("node %d: no version vector", i))
		case missing > 0:
			out = append(out, fmt.Sprintf("node %d lacks %d events: %s", i, missing, strings.Join(runs, ", ")))
		}
	}
	return out
}

func seqRange(from, to uint64) string {
	if from == to {
		return fmt.Sprint(from)
	}
	return fmt.Sprintf("%d-%d", from, to)
}

// shortPeer is the end of a peer ID, enough to tell a testnet's nodes apart.
func shortPeer(p string) string {
	if len(p) > 8 {
		return "…" + p[len(p)-6:]
	}
	return p
}

// count returns node i's event count, 0 if it cannot say.
func count(ctx context.Context, c cluster, i int, room string) uint64 {
	n, err := c.Count(ctx, i, room)
	if err != nil {
		return 0
	}
	return n
}

// running lists the running nodes.
func running(c cluster) []int {
	var out []int
	for i := range c.Len() {
		if c.Running(i) {
			out = append(out, i)
		}
	}
	return out
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// check reads the room's log on every listed node, compares the orders and
// counts the deliveries of the recorded messages.
func (r *runner) check(ctx context.Context, c cluster, room string, rec *recorder, nodes []int, res *ScenarioResult) error {
	sent := rec.sentSet()
	res.Sent += len(sent)
	// Each log unlike those before it is compared with every one of them:
	// agreeing with node 0 where they overlap does not make two nodes
	// agree on the events node 0 lacks. Logs are alike in a run that
	// converged, so this is one comparison a node.
	type distinct struct {
		node int
		log  []entry
	}
	var seen []distinct
	res.OrderChecked = true
	for _, i := range nodes {
		log, err := c.Log(ctx, i, room)
		if err != nil {
			return fmt.Errorf("read log of node %d: %w", i, err)
		}
		if !slices.ContainsFunc(seen, func(d distinct) bool { return sameOrder(d.log, log) }) {
			agrees := true
			for _, d := range seen {
				if !sameRelativeOrder(d.log, log) {
					agrees, res.OrderIdentical = false, false
					res.Notes = append(res.Notes, fmt.Sprintf("node %d shows the events it shares with node %d in another order", i, d.node))
					break
				}
			}
			if agrees && len(seen) > 0 {
				res.Notes = append(res.Notes, fmt.Sprintf("node %d holds %d events, node %d %d (same order where they overlap)", i, len(log), seen[0].node, len(seen[0].log)))
			}
			seen = append(seen, distinct{i, log})
		}
		have := make(map[int]bool, len(log))
		for _, e := range log {
			if idx := msgIndex(e.Text); idx >= 0 {
				have[idx] = true
			}
		}
		for idx, from := range sent {
			if from == i {
				continue
			}
			res.Expected++
			if have[idx] {
				res.Delivered++
			}
		}
	}
	if res.Expected > 0 {
		res.DeliveryRatio = float64(res.Delivered) / float64(res.Expected)
	} else {
		res.DeliveryRatio = 1
	}
	return nil
}

func sameOrder(a, b []entry) bool {
	return slices.EqualFunc(a, b, func(x, y entry) bool { return x.ID == y.ID })
}

// sameRelativeOrder reports whether the events both logs hold appear in the
// same order in both (a node that misses events has not diverged).
func sameRelativeOrder(a, b []entry) bool {
	inA := make(map[string]bool, len(a))
	for _, e := range a {
		inA[e.ID] = true
	}
	inB := make(map[string]bool, len(b))
	for _, e := range b {
		inB[e.ID] = true
	}
	i, j := 0, 0
	for {
		for i < len(a) && !inB[a[i].ID] {
			i++
		}
		for j < len(b) && !inA[b[j].ID] {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if a[i].ID != b[j].ID {
			return false
		}
		i++
		j++
	}
}
