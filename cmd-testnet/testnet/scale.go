package testnet

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
)

// ScaleResult is what the scale scenario measured: the cost of N nodes for
// each N, and how it grows.
type ScaleResult struct {
	Mode     Mode    `json:"mode"`
	RoomSize int     `json:"room_size"`
	WindowS  float64 `json:"window_s"`
	// PerNodeRate is each node's message rate under load (messages per
	// second, into its room).
	PerNodeRate float64 `json:"per_node_rate_per_s"`
	// SyncIntervalS is the rooms' anti-entropy period the nodes ran with:
	// the node's default unless -sync was given.
	SyncIntervalS float64    `json:"sync_interval_s"`
	Rows          []ScaleRow `json:"rows"`
	// Fits are least-squares lines total = intercept + slope·N over the
	// rows, one per figure, with what they predict for 1,000 nodes.
	Fits []ScaleFit `json:"fits,omitempty"`
}

// ScaleRow is one N.
type ScaleRow struct {
	Nodes  int     `json:"nodes"`
	Rooms  int     `json:"rooms"`
	StartS float64 `json:"start_s"` // start the nodes and open the rooms
	// Idle is measured over a window with the rooms open and nothing said,
	// Load over a window in which every node says PerNodeRate messages a
	// second into its room. Totals over every node; in-process, what the
	// process used before the nodes started is taken off.
	Idle ScaleCost `json:"idle"`
	Load ScaleCost `json:"load"`
	// Delivery of the load's messages, over every room; SaysFailed is
	// how many of the load's Says returned an error (they fail the run).
	SaysFailed     int      `json:"says_failed"`
	Sent           int      `json:"sent"`
	Expected       int      `json:"expected_deliveries"`
	Delivered      int      `json:"delivered"`
	OrderIdentical bool     `json:"order_identical"`
	Latency        *Latency `json:"latency,omitempty"`
	// Saturated is true when the load used 90 % or more of the machine's
	// CPUs: the figures then say more about the machine than the nodes.
	Saturated bool     `json:"cpu_saturated,omitempty"`
	Load1     float64  `json:"loadavg_1m"` // the machine's load average at the end
	Notes     []string `json:"notes,omitempty"`

	sayErr string // the first failed Say's error
}

// ScaleCost is what N nodes used together, and per node.
type ScaleCost struct {
	RSSMiB     float64 `json:"rss_mib"`
	RSSAnonMiB float64 `json:"rss_anon_mib"`
	HeapMiB    float64 `json:"heap_mib"`
	Goroutines float64 `json:"goroutines"`
	// CPU is CPU seconds per second over the window (cores busy).
	CPU float64 `json:"cpu_s_per_s"`
	// Per node.
	RSSPerNodeMiB     float64 `json:"rss_per_node_mib"`
	HeapPerNodeMiB    float64 `json:"heap_per_node_mib"`
	GoroutinesPerNode float64 `json:"goroutines_per_node"`
	CPUPerNode        float64 `json:"cpu_per_node_s_per_s"`
	PeersPerNode      float64 `json:"peers_per_node"`
	FDsPerNode        float64 `json:"fds_per_node"`
}

// ScaleFit is a straight line through one figure's totals by N.
type ScaleFit struct {
	Figure    string  `json:"figure"`
	Unit      string  `json:"unit"`
	Slope     float64 `json:"per_node"` // the cost of one more node
	Intercept float64 `json:"intercept"`
	// R2 is the line's coefficient of determination; through two sizes
	// (Sizes, the distinct Ns fitted) it is 1 whatever the figures.
	R2     float64 `json:"r2"`
	Sizes  int     `json:"sizes"`
	At1000 float64 `json:"at_1000_nodes"`
	// PerNodeAt1000 is At1000 / 1000. PerNodeGrowth is the slope of the
	// per-node figure against N, times 100: how much each node's cost
	// rises for every 100 more nodes (0 when the total is linear in N);
	// PerNodeTrendAt1000 is the per-node figure at 1,000 nodes if it keeps
	// rising so (a total quadratic in N, as full-mesh connections are).
	PerNodeAt1000      float64 `json:"per_node_at_1000"`
	PerNodeGrowth      float64 `json:"per_node_growth_per_100_nodes"`
	PerNodeTrendAt1000 float64 `json:"per_node_trend_at_1000"`
	// On one machine every node ends up connected to every other, so
	// per-node costs that grow with N grow with the peers. PerPeer and
	// AtNoPeers fit the per-node figure against the peers per node;
	// PerNodeAtCap is that line at ConnCap peers, the connection
	// manager's high watermark, which a node of a 1,000-node network
	// stays under.
	PerPeer      float64 `json:"per_peer"`
	AtNoPeers    float64 `json:"at_no_peers"`
	PerNodeAtCap float64 `json:"per_node_at_conn_cap"`
	ConnCap      int     `json:"conn_cap"`
}

// connCap is the node's default connection manager high watermark
// (node.Config.ConnHigh).
const connCap = 192

// scaleSettle is how long the nodes settle (DHT refreshes, the connection
// manager) after the rooms are open, before the idle window: 5 s, or the
// window if shorter.
const scaleSettle = 5 * time.Second

// scale measures, for each N of Config.Scale, what N nodes cost at idle
// and under one message a second per node, and fits how it grows.
func (r *runner) scale(ctx context.Context) (res ScenarioResult, err error) {
	res.OrderIdentical = true
	res.OrderChecked = true
	// The node's own anti-entropy period (unless -sync says otherwise),
	// not the other scenarios' quicker one: the rooms' periodic catch-ups
	// are part of an idle node's CPU, which is to be measured, and
	// predicted for 1,000 nodes, at the rate nodes run.
	r.inScale = true
	defer func() { r.inScale = false }()
	sr := &ScaleResult{Mode: r.cfg.Mode, RoomSize: r.cfg.RoomSize, WindowS: r.cfg.Duration.Seconds(), PerNodeRate: 1, SyncIntervalS: r.syncPeriod().Seconds()}
	res.Scale = sr
	r.p.printf("rooms' anti-entropy every %v", r.syncPeriod())
	ns := slices.Clone(r.cfg.Scale)
	slices.Sort(ns)
	ns = slices.Compact(ns)
	var all []time.Duration
	for _, n := range ns {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		// In one process over TCP, every node ends up connected to every
		// other (the DHT), now and then twice (both dialled), and both
		// ends of each connection are this process's files: measured, a
		// node holds about 1.1 files per peer and 9 more.
		if lim, need := fdLimit(), n*(n-1)*5/4+16*n; r.cfg.Mode == InProcess && lim > 0 && need > lim {
			note := fmt.Sprintf("N = %d skipped: a full mesh of %d nodes in one process may need %d file descriptors and the limit is %d (use -mocknet or -procs)", n, n, need, lim)
			r.p.printf("%s", note)
			res.Notes = append(res.Notes, note)
			continue
		}
		r.p.printf("N = %d", n)
		row, lat, err := r.scaleRow(ctx, n)
		if err != nil {
			// Keep what the smaller N measured.
			sr.Fits = scaleFits(sr.Rows)
			return res, fmt.Errorf("N = %d: %w", n, err)
		}
		sr.Rows = append(sr.Rows, row)
		res.Sent += row.Sent
		res.Expected += row.Expected
		res.Delivered += row.Delivered
		res.SaysFailed += row.SaysFailed
		if res.sayErr == "" {
			res.sayErr = row.sayErr
		}
		if !row.OrderIdentical {
			res.OrderIdentical = false
		}
		for _, note := range row.Notes {
			res.Notes = append(res.Notes, fmt.Sprintf("N = %d: %s", n, note))
		}
		all = lat // the largest N's latency stands for the scenario
		r.p.printf("N = %d: %.1f MiB and %.0f goroutines idle, %.1f MiB and %.0f goroutines loaded, %.2f idle and %.2f loaded CPU ms/s per node; delivered %d/%d",
			n, row.Idle.RSSPerNodeMiB, row.Idle.GoroutinesPerNode, row.Load.RSSPerNodeMiB, row.Load.GoroutinesPerNode, 1000*row.Idle.CPUPerNode, 1000*row.Load.CPUPerNode, row.Delivered, row.Expected)
	}
	if len(sr.Rows) == 0 {
		return res, fmt.Errorf("%w: no N of -scale fits this process", ErrUnsupported)
	}
	res.Nodes = sr.Rows[len(sr.Rows)-1].Nodes
	res.DeliveryRatio = 1
	if res.Expected > 0 {
		res.DeliveryRatio = float64(res.Delivered) / float64(res.Expected)
	}
	res.Latency = summarize(slices.Clone(all))
	res.samples = all
	sr.Fits = scaleFits(sr.Rows)
	return res, nil
}

// scaleGroups splits nodes 0..n-1 into rooms of size members (a remainder
// of one node joins the last room).
func scaleGroups(n, size int) [][]int {
	var out [][]int
	for first := 0; first < n; first += size {
		g := all(n)[first:min(n, first+size)]
		if len(g) < 2 && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], g...)
			continue
		}
		out = append(out, g)
	}
	return out
}

func (r *runner) scaleRow(ctx context.Context, n int) (row ScaleRow, lat []time.Duration, err error) {
	row.Nodes = n
	row.OrderIdentical = true
	// In-process, the baseline is the process before the nodes, taken
	// now that the previous N's nodes are gone.
	base := usage{At: time.Now()}
	if r.cfg.inProcess() {
		quiesce()
		if base, err = selfUsage(); err != nil {
			return row, nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
	}
	t0 := time.Now()
	c, err := r.start(ctx, n)
	if err != nil {
		return row, nil, err
	}
	defer c.Close()
	m, ok := c.(meter)
	if !ok {
		return row, nil, fmt.Errorf("%w: this mode cannot measure its nodes", ErrUnsupported)
	}
	groups := scaleGroups(n, r.cfg.RoomSize)
	row.Rooms = len(groups)
	rooms, bases, err := r.openRooms(ctx, c, "scale", groups)
	if err != nil {
		return row, nil, err
	}
	row.StartS = round3(time.Since(t0).Seconds())
	settle := min(scaleSettle, r.cfg.Duration)
	r.p.printf("%d nodes and %d rooms of up to %d up in %.1fs; settling for %v", n, len(groups), r.cfg.RoomSize, row.StartS, settle)
	if err := sleepCtx(ctx, settle); err != nil {
		return row, nil, err
	}

	// Idle.
	r.p.printf("idle for %v", r.cfg.Duration)
	before, err := m.usage(ctx)
	if err != nil {
		return row, nil, err
	}
	if err := sleepCtx(ctx, r.cfg.Duration); err != nil {
		return row, nil, err
	}
	after, err := m.usage(ctx)
	if err != nil {
		return row, nil, err
	}
	row.Idle = costOf(after.sub(base), after.CPU-before.CPU, after.At.Sub(before.At), n)

	// One message a second from every node into its room.
	total := max(1, int(r.cfg.Duration.Seconds())) // per node
	recs := make([]*recorder, len(groups))
	var subs []*subscriptions
	defer func() {
		for _, s := range subs {
			s.close()
		}
	}()
	for g, nodes := range groups {
		recs[g] = newRecorder(total*n, n)
		s, err := r.subscribe(ctx, c, rooms[g], recs[g], nodes, &bases[g])
		if err != nil {
			return row, nil, err
		}
		subs = append(subs, s)
	}
	roomOf := make([]int, n)
	for g, nodes := range groups {
		for _, i := range nodes {
			roomOf[i] = g
		}
	}
	r.p.printf("every node says 1 message a second for %v (%d msg/s in all)", r.cfg.Duration, n)
	st := &sendStats{}
	before, err = m.usage(ctx)
	if err != nil {
		return row, nil, err
	}
	r.sendPaced(ctx, c, n, total*n, 256, func(k int) (int, string, *recorder, int) {
		i := k % n
		return i, rooms[roomOf[i]], recs[roomOf[i]], k
	}, st)
	after, err = m.usage(ctx)
	if err != nil {
		return row, nil, err
	}
	used := after.sub(base)
	// In one process the subscriptions' goroutines are the testnet's,
	// not the nodes': take off those running now (processes' goroutines
	// are their own).
	if t, ok := c.(interface{ testnetGoroutines() int }); ok {
		used.Goroutines -= t.testnetGoroutines()
	}
	row.Load = costOf(used, after.CPU-before.CPU, after.At.Sub(before.At), n)
	row.Saturated = row.Load.CPU >= 0.9*float64(runtime.NumCPU())
	row.Load1 = loadAverage()
	var said ScenarioResult
	st.record(&said)
	row.SaysFailed, row.sayErr = said.SaysFailed, said.sayErr
	row.Notes = append(row.Notes, said.Notes...)

	// Every room converges; then every member holds every message, in one
	// order.
	for g, nodes := range groups {
		sent := uint64(len(recs[g].sentSet()))
		if _, err := r.converge(ctx, c, rooms[g], bases[g]+sent, nodes, r.drain(sent)); err != nil {
			row.Notes = append(row.Notes, fmt.Sprintf("room %d: %v", g, err))
		}
		var part ScenarioResult
		part.OrderIdentical = true
		if err := r.check(ctx, c, rooms[g], recs[g], nodes, &part); err != nil {
			return row, nil, err
		}
		row.Sent += part.Sent
		row.Expected += part.Expected
		row.Delivered += part.Delivered
		if !part.OrderIdentical {
			row.OrderIdentical = false
		}
		row.Notes = append(row.Notes, part.Notes...)
		lat = append(lat, recs[g].latencies()...)
	}
	row.Latency = summarize(slices.Clone(lat))
	return row, lat, nil
}

// sendPaced says count messages at rate a second, message k from the node,
// into the room and recorder, as the recorder's message idx, that pick(k)
// names, with at most inflight Says outstanding; it returns when all Says
// returned.
func (r *runner) sendPaced(ctx context.Context, c cluster, rate, count, inflight int, pick func(k int) (i int, room string, rec *recorder, idx int), st *sendStats) {
	sem := make(chan struct{}, inflight)
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	t := time.NewTicker(max(interval, time.Millisecond))
	defer t.Stop()
	start := time.Now()
	for k := 0; k < count; {
		due := min(count, int(time.Since(start)/interval)+1)
		for ; k < due; k++ {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				wg.Wait()
				return
			}
			i, room, rec, idx := pick(k)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				r.say(ctx, c, room, rec, st, i, idx)
			}()
		}
		if k >= count {
			break
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			wg.Wait()
			return
		}
	}
	wg.Wait()
}

func costOf(u usage, cpu, window time.Duration, n int) ScaleCost {
	const mib = 1 << 20
	c := ScaleCost{
		RSSMiB:     round3(float64(u.RSS) / mib),
		RSSAnonMiB: round3(float64(u.RSSAnon) / mib),
		HeapMiB:    round3(float64(u.Heap) / mib),
		Goroutines: float64(u.Goroutines),
	}
	if window > 0 {
		c.CPU = round3(cpu.Seconds() / window.Seconds())
	}
	fn := float64(n)
	c.RSSPerNodeMiB = round3(c.RSSMiB / fn)
	c.HeapPerNodeMiB = round3(c.HeapMiB / fn)
	c.GoroutinesPerNode = round3(c.Goroutines / fn)
	c.CPUPerNode = round6(c.CPU / fn)
	c.PeersPerNode = round3(float64(u.Peers) / fn)
	c.FDsPerNode = round3(float64(u.FDs) / fn)
	return c
}

func round6(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }

// scaleFits fits each figure's totals against N.
func scaleFits(rows []ScaleRow) []ScaleFit {
	// A line needs two sizes: through one N (measured twice, or the
	// other Ns skipped) it would put 1,000 nodes at that N's cost.
	sizes := map[int]bool{}
	peersVary := false
	for _, r := range rows {
		sizes[r.Nodes] = true
		peersVary = peersVary || r.Idle.PeersPerNode != rows[0].Idle.PeersPerNode
	}
	if len(sizes) < 2 {
		return nil
	}
	figures := []struct {
		name, unit string
		get        func(ScaleRow) float64
	}{
		{"idle RSS", "MiB", func(r ScaleRow) float64 { return r.Idle.RSSMiB }},
		{"idle heap", "MiB", func(r ScaleRow) float64 { return r.Idle.HeapMiB }},
		{"idle goroutines", "", func(r ScaleRow) float64 { return r.Idle.Goroutines }},
		{"idle CPU", "cores", func(r ScaleRow) float64 { return r.Idle.CPU }},
		{"loaded CPU", "cores", func(r ScaleRow) float64 { return r.Load.CPU }},
		{"loaded RSS", "MiB", func(r ScaleRow) float64 { return r.Load.RSSMiB }},
		{"loaded heap", "MiB", func(r ScaleRow) float64 { return r.Load.HeapMiB }},
		{"loaded goroutines", "", func(r ScaleRow) float64 { return r.Load.Goroutines }},
		{"peer connections", "", func(r ScaleRow) float64 { return r.Idle.PeersPerNode * float64(r.Nodes) }},
		{"open files", "", func(r ScaleRow) float64 { return r.Idle.FDsPerNode * float64(r.Nodes) }},
	}
	xs := make([]float64, len(rows))
	peers := make([]float64, len(rows))
	for i, r := range rows {
		xs[i] = float64(r.Nodes)
		peers[i] = r.Idle.PeersPerNode
	}
	var out []ScaleFit
	for _, f := range figures {
		ys := make([]float64, len(rows))
		per := make([]float64, len(rows))
		for i, r := range rows {
			ys[i] = f.get(r)
			per[i] = ys[i] / xs[i]
		}
		slope, icept, r2 := linearFit(xs, ys)
		pslope, picept, _ := linearFit(xs, per)
		at := icept + 1000*slope
		fit := ScaleFit{
			Figure: f.name, Unit: f.unit,
			Slope: round6(slope), Intercept: round3(icept), R2: round3(r2), Sizes: len(sizes),
			At1000: round3(at), PerNodeAt1000: round6(at / 1000), PerNodeGrowth: round6(100 * pslope),
			PerNodeTrendAt1000: round6(picept + 1000*pslope),
		}
		if f.name != "peer connections" && peersVary {
			// Only peers that vary give a line (peers read as 0, when
			// a mode cannot count them, would give the mean at any count).
			pp, p0, _ := linearFit(peers, per)
			fit.PerPeer, fit.AtNoPeers = round6(pp), round6(p0)
			fit.PerNodeAtCap, fit.ConnCap = round6(p0+connCap*pp), connCap
		}
		out = append(out, fit)
	}
	return out
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// roomsAtOnce is how many rooms are opened at once: 4 in-process, one at a
// time for processes.
func (r *runner) roomsAtOnce() int {
	if r.cfg.inProcess() {
		return 4
	}
	return 1
}

// shortRate says that a scenario said achieved messages a second where
// asked for asked, when it fell more than 5 % short ("" otherwise).
func shortRate(asked int, achieved float64) string {
	if achieved >= 0.95*float64(asked) {
		return ""
	}
	return fmt.Sprintf("said %.1f msg/s of the %d asked for: the figures are of that lighter load", achieved, asked)
}
