package testnet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/parley-mesh/parley/node"
)

// baseline runs the fanout workload (one publisher, every other node
// receives, Rate messages a second of Size bytes for Duration) on raw
// go-libp2p-pubsub (as configured by default, and publishing through the
// mesh as Parley does) and on an embedded NATS server, and compares
// parley's fanout figures with theirs.
func (r *runner) baseline(ctx context.Context, parley *ScenarioResult) (*Baseline, error) {
	n := r.cfg.Nodes
	b := &Baseline{
		Workload: fmt.Sprintf("1 publisher, %d receivers, %d msg/s of %d B for %v", n-1, r.cfg.Rate, r.cfg.Size, r.cfg.Duration),
		Parley:   parley,
	}
	var gs *ScenarioResult
	var err error
	pprof.Do(ctx, pprof.Labels("system", "gossipsub"), func(ctx context.Context) { gs, err = r.rawGossipSub(ctx, false) })
	if err != nil {
		return b, fmt.Errorf("raw gossipsub: %w", err)
	}
	b.GossipSub = gs
	r.p.printf("gossipsub: %s", summaryLine(gs))
	var gm *ScenarioResult
	pprof.Do(ctx, pprof.Labels("system", "gossipsub-mesh"), func(ctx context.Context) { gm, err = r.rawGossipSub(ctx, true) })
	if err != nil {
		return b, fmt.Errorf("raw gossipsub, mesh publishing: %w", err)
	}
	b.GossipSubMesh = gm
	r.p.printf("gossipsub-mesh: %s", summaryLine(gm))
	var nt *ScenarioResult
	pprof.Do(ctx, pprof.Labels("system", "nats"), func(ctx context.Context) { nt, err = r.natsBaseline(ctx) })
	if err != nil {
		return b, fmt.Errorf("nats: %w", err)
	}
	b.NATS = nt
	r.p.printf("nats: %s", summaryLine(nt))
	b.compare(r.cfg.Busy, runtime.NumCPU())
	return b, nil
}

// compare gives Parley's latency and CPU per delivery as ratios to the
// baselines', and the targets, for a machine with busy of cpus CPUs kept
// busy by other processes. A latency ratio or target needs both systems'
// percentiles over every delivery of the workload (Incomparable), a CPU
// ratio every delivery made.
func (b *Baseline) compare(busy, cpus int) {
	// Percentiles over some of the deliveries are not those of the
	// workload: a system that lost any is compared with nothing.
	whole := func(s *ScenarioResult) *ScenarioResult {
		if s == nil || s.Incomparable() != "" {
			return nil
		}
		return s
	}
	parley, gs, gm, nt := whole(b.Parley), whole(b.GossipSub), whole(b.GossipSubMesh), whole(b.NATS)
	made := func(s *ScenarioResult) *ScenarioResult {
		if s == nil || s.Expected == 0 || s.Delivered != s.Expected {
			return nil
		}
		return s
	}
	lat := func(s *ScenarioResult) *Latency {
		if s == nil {
			return nil
		}
		return s.Latency
	}
	cpu := func(s *ScenarioResult) float64 {
		if s == nil {
			return 0
		}
		return s.Metrics["cpu_us_per_delivery"]
	}
	if parley != nil && parley.Latency != nil {
		b.Ratios = make(map[string]float64)
		ratio := func(name string, a, o float64) {
			if o > 0 {
				b.Ratios[name] = round3(a / o)
			}
		}
		b.Targets = targets(busy, cpus, parley.Latency, lat(gs))
		if l := lat(gs); l != nil {
			ratio("p50_vs_gossipsub", parley.Latency.P50, l.P50)
			ratio("p99_vs_gossipsub", parley.Latency.P99, l.P99)
		}
		if l := lat(gm); l != nil {
			ratio("p50_vs_gossipsub_mesh", parley.Latency.P50, l.P50)
			ratio("p99_vs_gossipsub_mesh", parley.Latency.P99, l.P99)
		}
		if l := lat(nt); l != nil {
			ratio("p50_vs_nats", parley.Latency.P50, l.P50)
			ratio("p99_vs_nats", parley.Latency.P99, l.P99)
		}
	}
	// CPU per delivery divides by the deliveries made, which the latencies'
	// count does not change.
	parley, gs, gm = made(b.Parley), made(b.GossipSub), made(b.GossipSubMesh)
	if parley != nil && cpu(gs) > 0 && cpu(parley) > 0 {
		if b.Ratios == nil {
			b.Ratios = make(map[string]float64)
		}
		b.Ratios["cpu_per_delivery_vs_gossipsub"] = round3(cpu(parley) / cpu(gs))
		if v := cpu(gm); v > 0 {
			b.Ratios["cpu_per_delivery_vs_gossipsub_mesh"] = round3(cpu(parley) / v)
		}
	}
}

// Incomparable says why s's latency percentiles are not the workload's
// (some deliveries not made, or made but not timed: a subscription the
// room cut off, a tail that ended), or "" when they cover every delivery.
func (s *ScenarioResult) Incomparable() string {
	switch {
	case s.Expected == 0:
		return "no delivery was expected"
	case s.Delivered != s.Expected:
		return fmt.Sprintf("made %d of %d deliveries", s.Delivered, s.Expected)
	case s.Latency == nil || s.Latency.Count != s.Expected:
		timed := 0
		if s.Latency != nil {
			timed = s.Latency.Count
		}
		return fmt.Sprintf("timed %d of its %d deliveries", timed, s.Expected)
	}
	return ""
}

// targets are the performance targets for a fanout with busy of cpus CPUs
// kept busy by other processes, and whether Parley's latency p met them
// against raw GossipSub's gs (nil: not measured): on a quiet machine, p50
// within 1.5 times and p99 within twice GossipSub's; with some CPUs busy,
// p50 within twice; with every one busy, p50 under 50 ms (no collapse);
// and p50 under 2 ms in any case.
func targets(busy, cpus int, p, gs *Latency) map[string]bool {
	t := map[string]bool{"p50 <= 2ms": p.P50 <= 2}
	switch {
	case busy >= cpus:
		t["p50 < 50ms, every CPU busy"] = p.P50 < 50
	case gs == nil:
	case busy <= 0:
		t["p50 <= 1.5x gossipsub"] = p.P50 <= 1.5*gs.P50
		t["p99 <= 2x gossipsub"] = p.P99 <= 2*gs.P99
	default:
		t["p50 <= 2x gossipsub, CPUs busy"] = p.P50 <= 2*gs.P50
	}
	return t
}

// fanoutProbe records a baseline's sends and deliveries.
type fanoutProbe struct {
	start  time.Time
	sentAt []atomic.Int64 // ns after start + 1; 0: not sent
	mu     sync.Mutex     // protects seen, lat, warm
	seen   []map[uint64]bool
	lat    []time.Duration
	warm   []bool // receivers that got a warm-up message
}

const warmupSeq = ^uint64(0)

func newProbe(messages, receivers int) *fanoutProbe {
	p := &fanoutProbe{start: time.Now(), sentAt: make([]atomic.Int64, messages), seen: make([]map[uint64]bool, receivers), warm: make([]bool, receivers)}
	for i := range p.seen {
		p.seen[i] = make(map[uint64]bool)
	}
	return p
}

func (p *fanoutProbe) payload(seq uint64, size int) []byte {
	b := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(b, seq)
	for i := 8; i < len(b); i++ {
		b[i] = 'x'
	}
	return b
}

func (p *fanoutProbe) got(recv int, data []byte) {
	now := time.Now()
	if len(data) < 8 {
		return
	}
	seq := binary.BigEndian.Uint64(data)
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq == warmupSeq {
		p.warm[recv] = true
		return
	}
	if seq >= uint64(len(p.sentAt)) || p.seen[recv][seq] {
		return
	}
	p.seen[recv][seq] = true
	if at := p.sentAt[seq].Load(); at != 0 {
		p.lat = append(p.lat, now.Sub(p.start.Add(time.Duration(at-1))))
	}
}

func (p *fanoutProbe) allWarm() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.warm {
		if !w {
			return false
		}
	}
	return true
}

func (p *fanoutProbe) delivered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lat)
}

// meshSettle is how long a fanout lets GossipSub's meshes settle (they are
// built at heartbeats, one a second) once every receiver heard the
// publisher, before the measured messages: the same for Parley's fanout
// and the GossipSub baselines.
const meshSettle = 3 * time.Second

// probeRun publishes the workload with pub at the configured rate and
// waits for the deliveries; it fills res. Before, it warms up until every
// receiver hears the publisher and settle has passed (GossipSub builds its
// mesh at heartbeats, one a second); warm-up messages do not count.
func (r *runner) probeRun(ctx context.Context, p *fanoutProbe, settle time.Duration, pub func(seq uint64) error, res *ScenarioResult) error {
	receivers := len(p.seen)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	settled := time.Now().Add(settle)
	werr := poll(ctx, 30*time.Second, func() bool {
		if p.allWarm() && time.Now().After(settled) {
			return true
		}
		select {
		case <-t.C:
			_ = pub(warmupSeq)
		default:
		}
		return false
	}, "every receiver to hear the publisher")
	if werr != nil {
		return werr
	}
	total := len(p.sentAt)
	cpu := startCPU()
	interval := time.Second / time.Duration(r.cfg.Rate)
	tick := time.NewTicker(max(interval, time.Millisecond))
	defer tick.Stop()
	start := time.Now()
	var failed int
	var firstErr error
	for k := 0; k < total; {
		due := min(total, int(time.Since(start)/interval)+1)
		for ; k < due; k++ {
			p.sentAt[k].Store(int64(time.Since(p.start)) + 1)
			if err := pub(uint64(k)); err != nil {
				p.sentAt[k].Store(0)
				failed++
				if firstErr == nil {
					firstErr = err
				}
			}
		}
		if k >= total {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sendTime := time.Since(start)
	res.Sent = total - failed
	res.Expected = res.Sent * receivers
	// As for Parley's fanout: a publisher that fell behind the rate put
	// a lighter load on its system, and its figures say so.
	achieved := float64(res.Sent) / sendTime.Seconds()
	res.metric("achieved_rate_per_s", achieved)
	if n := shortRate(r.cfg.Rate, achieved); n != "" {
		res.Notes = append(res.Notes, n)
	}
	if failed > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d publishes failed (first: %v)", failed, firstErr))
	}
	if err := poll(ctx, r.drain(uint64(res.Sent)), func() bool { return p.delivered() >= res.Expected }, "every delivery"); err != nil {
		res.Notes = append(res.Notes, err.Error())
	}
	p.mu.Lock()
	lat := append([]time.Duration(nil), p.lat...)
	p.mu.Unlock()
	res.Delivered = len(lat)
	cpu.note(res, res.Delivered)
	res.DeliveryRatio = float64(res.Delivered) / float64(max(1, res.Expected))
	res.OrderIdentical = true
	res.Latency = summarize(lat)
	res.samples = lat
	return nil
}

// rawGossipSub: n libp2p hosts on 127.0.0.1 with GossipSub's default
// options, one topic, host 0 publishes. GossipSub floods a publisher's own
// messages to every peer subscribed to the topic, so every receiver is one
// hop away. With mesh set, the hosts run as Parley nodes do: flood
// publishing off (Parley's flood set would not be peer-filtered), Parley's
// mesh size (node.GossipSubParams) and host 0 subscribed, in the topic's
// mesh, so receivers outside its mesh get a message through a relay.
func (r *runner) rawGossipSub(ctx context.Context, mesh bool) (res *ScenarioResult, err error) {
	n := r.cfg.Nodes
	name := "gossipsub"
	if mesh {
		name = "gossipsub-mesh"
	}
	res = &ScenarioResult{Name: name, Nodes: n}
	t0 := time.Now()
	defer func() { res.ElapsedS = round3(time.Since(t0).Seconds()) }()
	r.p.printf("%s: starting %d raw libp2p hosts", name, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hosts := make([]host.Host, 0, n)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		for _, h := range hosts {
			_ = h.Close()
		}
	}()
	for i := range n {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
		if err != nil {
			return res, fmt.Errorf("%w: raw host %d: %v", ErrNodeStart, i, err)
		}
		hosts = append(hosts, h)
	}
	// Everyone dials host 0 and up to 8 others at random (all of them in
	// small nets), as Parley nodes find each other through node 0 and the
	// DHT.
	rng := rand.New(rand.NewPCG(3, 4))
	var mu sync.Mutex // protects dialErr
	var dialErr error
	// Each pair is dialled once, by its higher host: two hosts dialling
	// each other at once from their listening ports (TCP port reuse) can
	// meet in one TCP connection that both take for their own outbound
	// one, and the security handshake fails on both sides.
	dialled := make(map[[2]int]bool)
	for i := 1; i < n; i++ {
		targets := []int{0}
		if n <= 10 {
			for j := 1; j < i; j++ {
				targets = append(targets, j)
			}
		} else {
			for range 8 {
				if j := rng.IntN(n); j != i && j != 0 {
					targets = append(targets, j)
				}
			}
		}
		for _, j := range targets {
			i, j := max(i, j), min(i, j)
			if dialled[[2]int{i, j}] {
				continue
			}
			dialled[[2]int{i, j}] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
				defer dcancel()
				if err := hosts[i].Connect(dctx, peer.AddrInfo{ID: hosts[j].ID(), Addrs: hosts[j].Addrs()}); err != nil {
					mu.Lock()
					dialErr = errors.Join(dialErr, fmt.Errorf("host %d → %d: %w", i, j, err))
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if dialErr != nil {
		return res, dialErr
	}
	const topic = "/parley-testnet/baseline"
	topics := make([]*pubsub.Topic, n)
	p := newProbe(r.cfg.messages(), n-1)
	hl := newHopLog()
	ids := make([]peer.ID, n)
	for i, h := range hosts {
		ids[i] = h.ID()
	}
	hl.setPeers(ids)
	for i, h := range hosts {
		opts := []pubsub.Option{pubsub.WithFloodPublish(!mesh), pubsub.WithRawTracer(hl.tracer(i))}
		if mesh {
			opts = append(opts, pubsub.WithGossipSubParams(node.GossipSubParams()))
		}
		ps, err := pubsub.NewGossipSub(ctx, h, opts...)
		if err != nil {
			return res, err
		}
		t, err := ps.Join(topic)
		if err != nil {
			return res, err
		}
		topics[i] = t
		if i == 0 && !mesh {
			continue
		}
		sub, err := t.Subscribe(pubsub.WithBufferSize(1 << 14))
		if err != nil {
			return res, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := sub.Next(ctx)
				if err != nil {
					return
				}
				if i > 0 { // host 0 reads its own only to stay subscribed
					p.got(i-1, m.Data)
				}
			}
		}()
	}
	r.p.printf("%s: host 0 publishes %d messages at %d/s", name, len(p.sentAt), r.cfg.Rate)
	stop := r.p.every(ctx, 2*time.Second, func() string { return fmt.Sprintf("%d deliveries", p.delivered()) })
	defer stop()
	warm := true
	err = r.probeRun(ctx, p, meshSettle, func(seq uint64) error {
		if warm && seq != warmupSeq {
			warm = false
			hl.start(0) // the measured messages only
		}
		data := p.payload(seq, r.cfg.Size)
		err := topics[0].Publish(ctx, data)
		hl.published(data, time.Now())
		return err
	}, res)
	hl.stop()
	res.Hops = hl.breakdown()
	return res, err
}

// natsBaseline: an embedded NATS server on 127.0.0.1, n-1 subscriber
// connections and one publisher connection.
func (r *runner) natsBaseline(ctx context.Context) (res *ScenarioResult, err error) {
	n := r.cfg.Nodes
	res = &ScenarioResult{Name: "nats", Nodes: n}
	t0 := time.Now()
	defer func() { res.ElapsedS = round3(time.Since(t0).Seconds()) }()
	r.p.printf("nats: starting an embedded server and %d connections", n)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true, NoSystemAccount: true})
	if err != nil {
		return res, err
	}
	go srv.Start()
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	if !srv.ReadyForConnections(10 * time.Second) {
		return res, errors.New("the embedded NATS server did not start within 10 s")
	}
	url := srv.ClientURL()
	p := newProbe(r.cfg.messages(), n-1)
	var conns []*nats.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	const subject = "parley.testnet.baseline"
	for i := 1; i < n; i++ {
		c, err := nats.Connect(url, nats.Name(fmt.Sprintf("sub%d", i)))
		if err != nil {
			return res, err
		}
		conns = append(conns, c)
		if _, err := c.Subscribe(subject, func(m *nats.Msg) { p.got(i-1, m.Data) }); err != nil {
			return res, err
		}
		if err := c.Flush(); err != nil {
			return res, err
		}
	}
	pub, err := nats.Connect(url, nats.Name("pub"))
	if err != nil {
		return res, err
	}
	conns = append(conns, pub)
	r.p.printf("nats: publishing %d messages at %d/s", len(p.sentAt), r.cfg.Rate)
	stop := r.p.every(ctx, 2*time.Second, func() string { return fmt.Sprintf("%d deliveries", p.delivered()) })
	defer stop()
	err = r.probeRun(ctx, p, 0, func(seq uint64) error {
		return pub.Publish(subject, p.payload(seq, r.cfg.Size))
	}, res)
	return res, err
}
