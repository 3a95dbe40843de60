package testnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-mesh/parley/rooms"
)

// drain is how long a scenario waits after its traffic for every node to
// hold every event before it counts the missing ones as lost: the reach of
// anti-entropy (one period more than its longest backoff,
// rooms.AntiEntropyReach, at least 30 s) and the sending time, plus
// 2 ms for each of the events to move (500 events a second, a tenth of what
// a node takes in by sync on two busy cores), so the deadline grows with the
// work and a starved machine is not taken for a lossy one.
func (r *runner) drain(events uint64) time.Duration {
	sync := r.syncPeriod()
	return max(30*time.Second, (rooms.AntiEntropyReach+1)*sync) + r.cfg.Duration + time.Duration(events)*2*time.Millisecond
}

// syncPeriod is the nodes' anti-entropy period.
func (r *runner) syncPeriod() time.Duration {
	if d := r.inprocSync(); r.cfg.inProcess() && d > 0 {
		return d
	}
	return rooms.DefaultSyncInterval // the node's default
}

// inprocSync is the anti-entropy period in-process nodes are given: the
// configured one, or in the scale scenario its own (zero: the node's
// default).
func (r *runner) inprocSync() time.Duration {
	if r.inScale {
		return r.cfg.ScaleSyncInterval
	}
	return r.cfg.SyncInterval
}

// subscriptions follows a room on several nodes into a recorder.
type subscriptions struct {
	c    cluster
	room string
	rec  *recorder
	seen []atomic.Int64 // events each node's subscription saw
	mu   sync.Mutex     // protects stop
	stop map[int]func()
}

// subscribe follows room on the listed nodes; once every subscription is
// live (the first listed node says "ready" and all of them see it), it
// returns with base raised by that event.
func (r *runner) subscribe(ctx context.Context, c cluster, room string, rec *recorder, nodes []int, base *uint64) (*subscriptions, error) {
	s := &subscriptions{c: c, room: room, rec: rec, stop: make(map[int]func()), seen: make([]atomic.Int64, c.Len())}
	for _, i := range nodes {
		if err := s.add(i); err != nil {
			s.close()
			return nil, err
		}
	}
	// A subscription may start streaming only after the call that made
	// it returned (processes tail over their local API), so the first
	// "ready" may pass it by: say it again every 2 s until every
	// subscription saw one. Gossip usually brings it at once; a member
	// not yet in the topic's mesh gets it by anti-entropy.
	allSeen := func() bool {
		for _, i := range nodes {
			if s.seen[i].Load() == 0 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(max(20*time.Second, 2*r.syncPeriod()+5*time.Second))
	var err error
	for {
		if err = c.Say(ctx, nodes[0], room, "ready"); err != nil {
			s.close()
			return nil, fmt.Errorf("node %d says ready: %w", nodes[0], err)
		}
		*base++
		err = poll(ctx, min(2*time.Second, max(0, time.Until(deadline))), allSeen, "every subscription to see a ready event")
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		s.close()
		var none []string
		for _, i := range nodes {
			if s.seen[i].Load() == 0 {
				none = append(none, fmt.Sprintf("%d (holds %d events)", i, count(ctx, c, i, room)))
			}
		}
		return nil, fmt.Errorf("%w: nothing seen of room %s by nodes %s; node %d holds %d", err, short(room), strings.Join(none, ", "), nodes[0], count(ctx, c, nodes[0], room))
	}
	return s, nil
}

func (s *subscriptions) add(i int) error {
	stop, err := s.c.Subscribe(i, s.room, func(text string, at time.Time) {
		s.seen[i].Add(1)
		s.rec.deliver(i, text, at)
	})
	if err != nil {
		return fmt.Errorf("subscribe on node %d: %w", i, err)
	}
	s.mu.Lock()
	if old := s.stop[i]; old != nil {
		old()
	}
	s.stop[i] = stop
	s.mu.Unlock()
	return nil
}

func (s *subscriptions) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.stop {
		f()
		delete(s.stop, i)
	}
}

// sendStats counts a sender's outcome.
//
// A failed Say fails the run in every scenario (ScenarioResult.failed):
// Say stores and publishes on the node that says, and none of the
// scenarios takes that node away while it says. Fanout, burst, soak and
// scale keep every node up; partition cuts the links between nodes, not
// the testnet's hold on them (in-process calls, or a process's local API
// over its unix socket); churn crashes only nodes other than node 0, the
// one that says; restart crashes node n-1 while nodes 0 and 1 say (node 0
// alone with two nodes), and its big room fails the scenario outright if
// a Say fails.
type sendStats struct {
	said   atomic.Int64
	failed atomic.Int64
	mu     sync.Mutex // protects first
	first  error
}

func (s *sendStats) fail(err error) {
	s.failed.Add(1)
	s.mu.Lock()
	if s.first == nil {
		s.first = err
	}
	s.mu.Unlock()
}

// record adds the failed Says to res (a count and a note with the first
// error).
func (s *sendStats) record(res *ScenarioResult) {
	n := s.failed.Load()
	if n == 0 {
		return
	}
	res.SaysFailed += int(n)
	s.mu.Lock()
	first := s.first
	s.mu.Unlock()
	if res.sayErr == "" {
		res.sayErr = fmt.Sprint(first)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d says failed (first: %v)", n, first))
}

// say says message idx from node i and records it.
func (r *runner) say(ctx context.Context, c cluster, room string, rec *recorder, st *sendStats, i, idx int) {
	t0 := rec.said(idx, i)
	if err := c.Say(ctx, i, room, msgText(idx, r.cfg.Size)); err != nil {
		rec.unsay(idx)
		st.fail(fmt.Errorf("node %d: %w", i, err))
		return
	}
	rec.sayDone(time.Since(t0))
	st.said.Add(1)
}

// sendSteady says messages first..first+total-1 into room at the
// configured rate, message k from node sender(k), with at most 64 Says
// outstanding. It returns when all Says returned.
func (r *runner) sendSteady(ctx context.Context, c cluster, room string, rec *recorder, first, total int, sender func(k int) int, st *sendStats) {
	r.sendPaced(ctx, c, r.cfg.Rate, total, 64, func(k int) (int, string, *recorder, int) { return sender(k), room, rec, first + k }, st)
}

// sendBurst says the messages in idx from node i as fast as workers
// concurrent Says allow.
func (r *runner) sendBurst(ctx context.Context, c cluster, room string, rec *recorder, st *sendStats, i int, idx []int, workers int) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				r.say(ctx, c, room, rec, st, i, k)
			}
		}()
	}
	for _, k := range idx {
		select {
		case work <- k:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

// openRoom opens the scenario's room on every node and waits until every
// node shows every event.
//
// A node publishes its join as soon as it has caught up, before GossipSub
// has put it into the topic's mesh (that happens at the next heartbeat), so
// joins often travel only by anti-entropy, every 30 s by default. Rather
// than wait for that, every node says hello in rounds until all nodes
// agree: a hello has its author's earlier events in its past, and a node
// missing a parent fetches it from the sender at once.
func (r *runner) openRoom(ctx context.Context, c cluster, name string) (string, uint64, error) {
	room, err := c.OpenRoom(ctx, name)
	if err != nil {
		return "", 0, fmt.Errorf("open room: %w", err)
	}
	return r.helloRounds(ctx, c, room, running(c))
}

// openRoomOf opens a room of the listed nodes (the first creates it) the
// way openRoom does.
// openRooms opens a room named PREFIX-G of the nodes of each group G, a
// few at once (roomsAtOnce), and returns their IDs and each room's
// starting event count, as openRoomOf does for one.
func (r *runner) openRooms(ctx context.Context, c cluster, prefix string, groups [][]int) ([]string, []uint64, error) {
	rooms := make([]string, len(groups))
	bases := make([]uint64, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.roomsAtOnce())
	for g, nodes := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rooms[g], bases[g], errs[g] = r.openRoomOf(ctx, c, fmt.Sprintf("%s-%d", prefix, g), nodes)
		}()
	}
	wg.Wait()
	return rooms, bases, errors.Join(errs...)
}

func (r *runner) openRoomOf(ctx context.Context, c cluster, name string, nodes []int) (string, uint64, error) {
	room, err := c.OpenRoomOf(ctx, name, nodes[0], nodes)
	if err != nil {
		return "", 0, fmt.Errorf("open room %s: %w", name, err)
	}
	return r.helloRounds(ctx, c, room, nodes)
}

// helloRounds has every listed node say hello in rounds until they all
// hold the same events of room, and returns that count.
func (r *runner) helloRounds(ctx context.Context, c cluster, room string, nodes []int) (string, uint64, error) {
	// create + an invite per member + the hellos.
	least := uint64(len(nodes))
	var werr error
	for round := 1; round <= 20; round++ {
		var wg sync.WaitGroup
		var said atomic.Int64
		for _, i := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c.Say(ctx, i, room, fmt.Sprintf("hello %d from node %d", round, i)) == nil {
					said.Add(1)
				}
			}()
		}
		wg.Wait()
		least += uint64(said.Load())
		if _, werr = r.converge(ctx, c, room, least, nodes, 1200*time.Millisecond); werr == nil {
			base := count(ctx, c, nodes[0], room)
			r.p.printf("room %s open on %d nodes with %d events (%d hello rounds)", short(room), len(nodes), base, round)
			return room, base, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return "", 0, fmt.Errorf("room setup: %w", werr)
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func (r *runner) sendStatus(rec *recorder, total, receivers int) func() string {
	return func() string {
		return fmt.Sprintf("said %d/%d, %d deliveries seen of %d", rec.okSent.Load(), total, rec.live(), int(rec.okSent.Load())*receivers)
	}
}

func latencyResult(res *ScenarioResult, rec *recorder) {
	lat := rec.latencies()
	res.Latency = summarize(lat)
	res.samples = lat
	if len(lat) < res.Delivered {
		// The logs hold deliveries no live subscription saw: a node was
		// down, or the room cut off a listener that fell behind.
		res.Notes = append(res.Notes, fmt.Sprintf("latency covers %d of the %d deliveries (the others no live subscription saw)", len(lat), res.Delivered))
	}
	if says := rec.sayDurations(); len(says) > 0 {
		s := summarize(says)
		res.metric("say_p50_ms", s.P50)
		res.metric("say_p99_ms", s.P99)
	}
}

func (s *ScenarioResult) metric(name string, v float64) {
	if s.Metrics == nil {
		s.Metrics = make(map[string]float64)
	}
	s.Metrics[name] = round3(v)
}

// fanout: node 0 says Rate messages a second for Duration; every other node
// stores them. Latency: Say call on node 0 → stored and visible on a node.
func (r *runner) fanout(ctx context.Context) (res ScenarioResult, err error) {
	res.OrderIdentical = true
	c, err := r.start(ctx, r.cfg.Nodes)
	if err != nil {
		return res, err
	}
	defer c.Close()
	room, base, err := r.openRoom(ctx, c, "fanout")
	if err != nil {
		return res, err
	}
	total := r.cfg.messages()
	rec := newRecorder(total, c.Len())
	subs, err := r.subscribe(ctx, c, room, rec, all(c.Len()), &base)
	if err != nil {
		return res, err
	}
	defer subs.close()
	st := &sendStats{}
	r.p.printf("node 0 says %d messages at %d/s", total, r.cfg.Rate)
	stop := r.p.every(ctx, 2*time.Second, r.sendStatus(rec, total, c.Len()-1))
	// Every node heard every other's hello (openRoom): the meshes settle
	// as long as the baselines' do before the measured messages.
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(meshSettle):
	}
	sl := stagesOf(c)
	if sl != nil {
		sl.start()
	}
	hl := hopsOf(c)
	if hl != nil {
		hl.start(0)
	}
	syncs := countSyncs(c)
	cpu := startCPU()
	t0 := time.Now()
	r.sendSteady(ctx, c, room, rec, 0, total, func(int) int { return 0 }, st)
	sendTime := time.Since(t0)
	stop()
	st.record(&res)
	achieved := float64(st.said.Load()) / sendTime.Seconds()
	res.metric("achieved_rate_per_s", achieved)
	if n := shortRate(r.cfg.Rate, achieved); n != "" {
		res.Notes = append(res.Notes, n)
	}
	conv, cerr := r.converge(ctx, c, room, base+uint64(st.said.Load()), all(c.Len()), r.drain(uint64(st.said.Load())))
	// Every delivery is done: the check of every node's log (finish) is
	// the testnet's work, not delivery's, and the baselines have none.
	cpu.stop()
	syncs.note(&res)
	res.ConvergeMs = ms(conv)
	if sl != nil {
		sl.stop()
		res.Stages = sl.breakdown()
	}
	if hl != nil {
		hl.stop()
		res.Hops = hl.breakdown()
	}
	res, err = r.finish(ctx, c, room, rec, all(c.Len()), res, cerr)
	if r.cfg.inProcess() {
		// Processes' CPU is theirs, not this one's.
		cpu.note(&res, res.Delivered)
	}
	return res, err
}

// burst: every node says its share of Burst messages at once, as fast as it
// can; how many deliveries are within 5 s of their Say, and how long until
// every node has everything.
func (r *runner) burst(ctx context.Context) (res ScenarioResult, err error) {
	res.OrderIdentical = true
	c, err := r.start(ctx, r.cfg.Nodes)
	if err != nil {
		return res, err
	}
	defer c.Close()
	room, base, err := r.openRoom(ctx, c, "burst")
	if err != nil {
		return res, err
	}
	n, total := c.Len(), r.cfg.Burst
	rec := newRecorder(total, n)
	subs, err := r.subscribe(ctx, c, room, rec, all(n), &base)
	if err != nil {
		return res, err
	}
	defer subs.close()
	st := &sendStats{}
	r.p.printf("every node says its share of %d messages at once", total)
	stop := r.p.every(ctx, 2*time.Second, r.sendStatus(rec, total, n-1))
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		var idx []int
		for k := i; k < total; k += n {
			idx = append(idx, k)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.sendBurst(ctx, c, room, rec, st, i, idx, 16)
		}()
	}
	wg.Wait()
	sendTime := time.Since(t0)
	stop()
	st.record(&res)
	conv, cerr := r.converge(ctx, c, room, base+uint64(st.said.Load()), all(n), r.drain(uint64(st.said.Load())))
	res.ConvergeMs = ms(conv)
	res.metric("send_s", sendTime.Seconds())
	res.metric("all_delivered_s", (sendTime + conv).Seconds())
	res.metric("throughput_msg_per_s", float64(st.said.Load())/(sendTime+conv).Seconds())
	if err := r.check(ctx, c, room, rec, all(n), &res); err != nil {
		return res, err
	}
	latencyResult(&res, rec)
	within := 0
	for _, d := range res.samples {
		if d <= 5*time.Second {
			within++
		}
	}
	if res.Expected > 0 {
		res.metric("within_5s_ratio", float64(within)/float64(res.Expected))
	}
	if cerr != nil {
		res.Unconverged = cerr.Error()
	}
	return res, nil
}

// partition: the nodes split in two halves; one node on each side talks
// for Duration; then the halves heal. Converge: heal → same log everywhere.
func (r *runner) partition(ctx context.Context) (res ScenarioResult, err error) {
	res.OrderIdentical = true
	c, err := r.start(ctx, r.cfg.Nodes)
	if err != nil {
		return res, err
	}
	defer c.Close()
	room, base, err := r.openRoom(ctx, c, "partition")
	if err != nil {
		return res, err
	}
	n := c.Len()
	left, right := all(n)[:n/2], all(n)[n/2:]
	total := r.cfg.messages()
	rec := newRecorder(total, n)
	subs, err := r.subscribe(ctx, c, room, rec, all(n), &base)
	if err != nil {
		return res, err
	}
	defer subs.close()
	if err := c.Partition(left, right); err != nil {
		return res, err
	}
	r.p.printf("partitioned %v | %v; nodes 0 and %d say %d messages at %d/s", left, right, right[0], total, r.cfg.Rate)
	st := &sendStats{}
	stop := r.p.every(ctx, 2*time.Second, r.sendStatus(rec, total, n-1))
	r.sendSteady(ctx, c, room, rec, 0, total, func(k int) int {
		if k%2 == 0 {
			return left[0]
		}
		return right[0]
	}, st)
	stop()
	st.record(&res)
	// Each side converges on its own.
	sent := rec.sentSet()
	var l, rt uint64
	for _, from := range sent {
		if from == left[0] {
			l++
		} else {
			rt++
		}
	}
	if _, err := r.converge(ctx, c, room, base+l, left, r.drain(l)); err != nil {
		res.Notes = append(res.Notes, "left side: "+err.Error())
	}
	if _, err := r.converge(ctx, c, room, base+rt, right, r.drain(rt)); err != nil {
		res.Notes = append(res.Notes, "right side: "+err.Error())
	}
	r.p.printf("healing")
	t0 := time.Now()
	if err := c.Heal(ctx); err != nil {
		return res, err
	}
	_, cerr := r.converge(ctx, c, room, base+l+rt, all(n), r.drain(l+rt))
	res.ConvergeMs = ms(time.Since(t0))
	return r.finish(ctx, c, room, rec, all(n), res, cerr)
}

// restart: (1) a node crashes and reopens: replay time, same log; (2) a node
// is away while the others say CatchUp events: catch-up time; (3) a room of
// BigRoom events is reopened after a restart and its last 50 events read.
func (r *runner) restart(ctx context.Context) (res ScenarioResult, err error) {
	res.OrderIdentical = true
	c, err := r.start(ctx, r.cfg.Nodes)
	if err != nil {
		return res, err
	}
	defer c.Close()
	room, base, err := r.openRoom(ctx, c, "restart")
	if err != nil {
		return res, err
	}
	n := c.Len()
	k := n - 1
	warm := min(r.cfg.messages(), 1000)
	total := warm + r.cfg.CatchUp
	rec := newRecorder(total, n)
	st := &sendStats{}

	// (1) Replay.
	r.p.printf("node 0 says %d messages, then node %d restarts", warm, k)
	r.sendSteady(ctx, c, room, rec, 0, warm, func(int) int { return 0 }, st)
	want := base + uint64(st.said.Load())
	if _, err := r.converge(ctx, c, room, want, all(n), r.drain(uint64(warm))); err != nil {
		res.Notes = append(res.Notes, "before the restart: "+err.Error())
	}
	before, err := c.Log(ctx, k, room)
	if err != nil {
		return res, err
	}
	if err := c.Crash(k); err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := c.Restart(ctx, k); err != nil {
		return res, fmt.Errorf("%w: restart node %d: %v", ErrNodeStart, k, err)
	}
	res.metric("replay_ms", ms(time.Since(t0)))
	res.metric("replay_events", float64(len(before)))
	after, err := c.Log(ctx, k, room)
	if err != nil {
		return res, err
	}
	// Catch-up may add events right after the reopen; none may go missing
	// or move.
	kept := make(map[string]bool, len(after))
	for _, e := range after {
		kept[e.ID] = true
	}
	if !sameRelativeOrder(before, after) || slices.ContainsFunc(before, func(e entry) bool { return !kept[e.ID] }) {
		res.OrderIdentical = false
		res.Notes = append(res.Notes, fmt.Sprintf("node %d shows %d events after its restart, %d before, or another order", k, len(after), len(before)))
	}

	// (2) Catch-up.
	if err := c.Crash(k); err != nil {
		return res, err
	}
	senders := []int{0}
	if n > 2 {
		senders = append(senders, 1)
	}
	r.p.printf("node %d is down; nodes %v say %d messages", k, senders, r.cfg.CatchUp)
	stop := r.p.every(ctx, 2*time.Second, func() string {
		return fmt.Sprintf("said %d/%d", rec.okSent.Load()-int64(warm), r.cfg.CatchUp)
	})
	var wg sync.WaitGroup
	for s, i := range senders {
		var idx []int
		for m := warm + s; m < total; m += len(senders) {
			idx = append(idx, m)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.sendBurst(ctx, c, room, rec, st, i, idx, 32)
		}()
	}
	wg.Wait()
	stop()
	want = base + uint64(st.said.Load())
	up := running(c)
	// The nodes that stayed up must agree first, or the catch-up below
	// would be measured against a moving target (and the check read logs
	// still filling).
	conv, err := r.converge(ctx, c, room, want, up, r.drain(uint64(r.cfg.CatchUp)))
	res.metric("converge_up_ms", ms(conv))
	if err != nil {
		res.Notes = append(res.Notes, "nodes up, before the catch-up: "+err.Error())
	}
	r.p.printf("node %d comes back and catches up with %d events", k, r.cfg.CatchUp)
	t0 = time.Now()
	if err := c.Restart(ctx, k); err != nil {
		return res, fmt.Errorf("%w: restart node %d: %v", ErrNodeStart, k, err)
	}
	reopen := time.Since(t0)
	// Evidence, not a count: every node's version vector equals the others'.
	_, cerr := r.converge(ctx, c, room, want, all(n), r.drain(uint64(r.cfg.CatchUp)))
	catchup := time.Since(t0)
	res.ConvergeMs = ms(catchup)
	res.metric("catchup_events", float64(r.cfg.CatchUp))
	res.metric("catchup_ms", ms(catchup))
	res.metric("catchup_after_reopen_ms", ms(catchup-reopen))
	res.metric("catchup_events_per_s", float64(r.cfg.CatchUp)/catchup.Seconds())
	if cerr != nil {
		res.Unconverged = "catch-up: " + cerr.Error()
	}
	if err := r.check(ctx, c, room, rec, all(n), &res); err != nil {
		return res, err
	}
	st.record(&res)

	// (3) A big room, reopened.
	if err := r.bigRoom(ctx, c, k, &res); err != nil {
		return res, err
	}
	return res, nil
}

// bigRoom fills a room on node k alone with BigRoom events, restarts the
// node and reads the room's last 50 events.
func (r *runner) bigRoom(ctx context.Context, c cluster, k int, res *ScenarioResult) error {
	big, err := c.CreateRoom(ctx, k, "big")
	if err != nil {
		return fmt.Errorf("create big room: %w", err)
	}
	total := r.cfg.BigRoom
	rec := newRecorder(total, c.Len())
	st := &sendStats{}
	r.p.printf("node %d fills a room with %d events", k, total)
	t0 := time.Now()
	stop := r.p.every(ctx, 2*time.Second, func() string { return fmt.Sprintf("said %d/%d", rec.okSent.Load(), total) })
	idx := make([]int, total)
	for m := range idx {
		idx[m] = m
	}
	r.sendBurst(ctx, c, big, rec, st, k, idx, 256)
	stop()
	fill := time.Since(t0)
	res.metric("bigroom_fill_events_per_s", float64(st.said.Load())/fill.Seconds())
	if n := st.failed.Load(); n > 0 {
		return fmt.Errorf("big room: %d of %d says failed: %v", n, total, st.first)
	}
	lastBefore, err := c.Tail(ctx, k, big, 50)
	if err != nil {
		return err
	}
	if err := c.Crash(k); err != nil {
		return err
	}
	t0 = time.Now()
	if err := c.Restart(ctx, k); err != nil {
		return fmt.Errorf("%w: restart node %d: %v", ErrNodeStart, k, err)
	}
	open := time.Since(t0)
	t1 := time.Now()
	last, err := c.Tail(ctx, k, big, 50)
	if err != nil {
		return fmt.Errorf("big room after restart: %w", err)
	}
	read := time.Since(t1)
	res.metric("bigroom_events", float64(total))
	res.metric("bigroom_reopen_ms", ms(open))
	res.metric("bigroom_read_last50_ms", ms(read))
	res.metric("bigroom_open_read_last50_ms", ms(open+read))
	count, err := c.Count(ctx, k, big)
	if err != nil {
		return err
	}
	res.Sent += total
	res.Expected += total + 1
	res.Delivered += int(min(count, uint64(total)+1))
	res.DeliveryRatio = float64(res.Delivered) / float64(res.Expected)
	if len(last) != 50 || !sameOrder(last, lastBefore) {
		res.OrderIdentical = false
		res.Notes = append(res.Notes, fmt.Sprintf("big room: the last 50 events differ after the restart (%d read)", len(last)))
	}
	return nil
}

// churn: node 0 talks for Duration while other nodes crash and come back;
// at the end every node is back and must show everything in one order.
func (r *runner) churn(ctx context.Context) (res ScenarioResult, err error) {
	res.OrderIdentical = true
	c, err := r.start(ctx, r.cfg.Nodes)
	if err != nil {
		return res, err
	}
	defer c.Close()
	room, base, err := r.openRoom(ctx, c, "churn")
	if err != nil {
		return res, err
	}
	n := c.Len()
	total := r.cfg.messages()
	rec := newRecorder(total, n)
	subs, err := r.subscribe(ctx, c, room, rec, all(n), &base)
	if err != nil {
		return res, err
	}
	defer subs.close()
	st := &sendStats{}
	period := min(max(r.cfg.Duration/10, 200*time.Millisecond), 5*time.Second)
	maxDown := max(1, (n-1)/3)
	r.p.printf("node 0 says %d messages at %d/s; every %v a node leaves or comes back (at most %d away)", total, r.cfg.Rate, period, maxDown)
	var crashes, restarts atomic.Int64
	churnCtx, stopChurn := context.WithCancel(ctx)
	churnErr := make(chan error, 1)
	go func() {
		churnErr <- r.churnLoop(churnCtx, c, subs, period, maxDown, &crashes, &restarts)
	}()
	stop := r.p.every(ctx, 2*time.Second, func() string {
		return fmt.Sprintf("said %d/%d, %d nodes up, %d crashes, %d restarts", rec.okSent.Load(), total, len(running(c)), crashes.Load(), restarts.Load())
	})
	r.sendSteady(ctx, c, room, rec, 0, total, func(int) int { return 0 }, st)
	stopChurn()
	stop()
	if err := <-churnErr; err != nil {
		return res, err
	}
	st.record(&res)
	t0 := time.Now()
	for i := range n {
		if !c.Running(i) {
			if err := c.Restart(ctx, i); err != nil {
				return res, fmt.Errorf("%w: restart node %d: %v", ErrNodeStart, i, err)
			}
			restarts.Add(1)
			if err := subs.add(i); err != nil {
				return res, err
			}
		}
	}
	_, cerr := r.converge(ctx, c, room, base+uint64(st.said.Load()), all(n), r.drain(uint64(st.said.Load())))
	res.ConvergeMs = ms(time.Since(t0))
	res.metric("crashes", float64(crashes.Load()))
	res.metric("restarts", float64(restarts.Load()))
	return r.finish(ctx, c, room, rec, all(n), res, cerr)
}

func (r *runner) churnLoop(ctx context.Context, c cluster, subs *subscriptions, period time.Duration, maxDown int, crashes, restarts *atomic.Int64) error {
	t := time.NewTicker(period)
	defer t.Stop()
	rng := rand.New(rand.NewPCG(1, 2))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		var up, down []int
		for i := 1; i < c.Len(); i++ {
			if c.Running(i) {
				up = append(up, i)
			} else {
				down = append(down, i)
			}
		}
		if len(down) > 0 && (len(down) >= maxDown || rng.IntN(2) == 0) {
			i := down[rng.IntN(len(down))]
			if err := c.Restart(ctx, i); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%w: restart node %d: %v", ErrNodeStart, i, err)
			}
			restarts.Add(1)
			if err := subs.add(i); err != nil {
				return err
			}
			if r.cfg.Verbose {
				r.p.printf("node %d is back", i)
			}
		} else if len(up) > 0 {
			i := up[rng.IntN(len(up))]
			if err := c.Crash(i); err != nil {
				return err
			}
			crashes.Add(1)
			if r.cfg.Verbose {
				r.p.printf("node %d crashed", i)
			}
		}
	}
}

// discovery: every node provides a key in the DHT; every node looks up the
// keys of up to 8 others (the provider must be found), then walks the DHT
// towards as many random keys. Latency: one walk (GetClosestPeers).
func (r *runner) discovery(ctx context.Context) (res ScenarioResult, err error) {
	res.OrderIdentical = true
	c, err := r.start(ctx, r.cfg.Nodes)
	if err != nil {
		return res, err
	}
	defer c.Close()
	d, ok := c.(discoverer)
	if !ok {
		return res, fmt.Errorf("%w: discovery needs the in-process mode (the local API does not expose DHT lookups)", ErrUnsupported)
	}
	n := c.Len()
	run := fmt.Sprintf("%d-%d", time.Now().UnixNano(), r.seq)
	key := func(i int) string { return fmt.Sprintf("%s/%d", run, i) }
	want := min(n-1, 5)
	err = poll(ctx, 60*time.Second, func() bool {
		for i := range n {
			if d.RoutingTable(i) < want {
				return false
			}
		}
		return true
	}, fmt.Sprintf("every node's DHT routing table to hold %d peers", want))
	if err != nil {
		return res, err
	}
	rt := make([]float64, n)
	for i := range n {
		rt[i] = float64(d.RoutingTable(i))
	}
	res.metric("routing_table_min", slices.Min(rt))
	r.p.printf("every node provides a key")
	var mu sync.Mutex // protects provide, errs
	var provide []time.Duration
	var errs []error
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			t0 := time.Now()
			err := d.Provide(pctx, i, key(i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("node %d provide: %w", i, err))
				return
			}
			provide = append(provide, time.Since(t0))
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return res, errors.Join(errs...)
	}
	ps := summarize(provide)
	res.metric("provide_p50_ms", ps.P50)
	res.metric("provide_max_ms", ps.Max)
	m := min(n-1, 8)
	r.p.printf("every node looks up %d others' keys (provider records), then walks the DHT to %d random keys", m, m)
	var finds, walks []time.Duration
	var found, tried atomic.Int64
	for j := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := 1; o <= m; o++ {
				i := (j + o) % n
				lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				t0 := time.Now()
				ok, err := d.Find(lctx, j, key(i), i)
				dur := time.Since(t0)
				cancel()
				tried.Add(1)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("node %d looks up node %d's key: %w", j, i, err))
				} else if ok {
					found.Add(1)
					finds = append(finds, dur)
				}
				mu.Unlock()
			}
			for o := range m {
				lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				t0 := time.Now()
				peers, err := d.Lookup(lctx, j, fmt.Sprintf("%s/walk/%d/%d", run, j, o))
				dur := time.Since(t0)
				cancel()
				tried.Add(1)
				mu.Lock()
				if err != nil || peers == 0 {
					errs = append(errs, fmt.Errorf("node %d walks the DHT: %d peers, %v", j, peers, err))
				} else {
					found.Add(1)
					walks = append(walks, dur)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Sent = n
	res.Expected = int(tried.Load())
	res.Delivered = int(found.Load())
	res.DeliveryRatio = float64(res.Delivered) / float64(max(1, res.Expected))
	if fs := summarize(finds); fs != nil {
		res.metric("find_provider_p50_ms", fs.P50)
		res.metric("find_provider_p99_ms", fs.P99)
	}
	res.Latency = summarize(slices.Clone(walks))
	res.samples = walks
	res.Notes = append(res.Notes, "latency: GetClosestPeers walks to random keys; lookups count as delivered when they find the provider or any peer")
	for _, e := range errs[:min(len(errs), 3)] {
		res.Notes = append(res.Notes, e.Error())
	}
	return res, nil
}

// finish checks that every node in nodes holds every recorded message in the
// same order, adds the latency figures, and records a convergence error
// (which fails the scenario).
func (r *runner) finish(ctx context.Context, c cluster, room string, rec *recorder, nodes []int, res ScenarioResult, cerr error) (ScenarioResult, error) {
	if err := r.check(ctx, c, room, rec, nodes, &res); err != nil {
		return res, err
	}
	latencyResult(&res, rec)
	if cerr != nil {
		res.Unconverged = cerr.Error()
	}
	return res, nil
}
