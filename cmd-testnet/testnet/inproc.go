package testnet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// agent is the agent name the testnet speaks as.
const agent identity.AgentName = "testnet"

// inproc runs nodes in this process through node/nodetest.
type inproc struct {
	t      *tb
	net    *nodetest.Net
	stages *stageLog
	hops   *hopLog
	subs   goroutines // the subscriptions' goroutines, the testnet's own
}

var (
	_ cluster    = (*inproc)(nil)
	_ discoverer = (*inproc)(nil)
)

// startInproc starts n nodes under dir. Rooms invite any connected node
// (no consent certificates): the testnet measures rooms, not consent.
func startInproc(n int, dir string, syncInterval time.Duration, logf func(string, ...any), opts ...nodetest.Option) (c *inproc, err error) {
	t := newTB(dir, logf)
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	defer catch(&err)
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w: %v", ErrNodeStart, err)
		}
	}()
	stages := newStageLog(n)
	hops := newHopLog()
	net := nodetest.Start(t, n, append(opts, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.NoLocalAPI = true
		c.SyncInterval = syncInterval
		c.RoomTrace = hops.roomTrace(i, stages.trace(i))
		c.GossipTracer = hops.tracer(i)
		c.StoreMemTableSize = staggeredMemTable(i)
	}))...)
	ids := make([]peer.ID, n)
	for i := range ids {
		ids[i] = net.ID(i)
	}
	hops.setPeers(ids)
	return &inproc{t: t, net: net, stages: stages, hops: hops}, nil
}

// staggeredMemTable is node i's memtable size: from 3 to 5 MiB, the
// nodes spread over that range (the same for a node at every start).
// Under the same load, nodes with one size fill their memtables in step
// and all rotate and flush them at once; on one disk that stalled every
// write in the process for seconds (the soak's 1–4 s tail, every 210 s),
// which a network of machines does not do.
func staggeredMemTable(i int) int64 {
	const lo, spread = 3 << 20, 2 << 20
	return lo + int64(i*617%64)*spread/64
}

func (c *inproc) stageLog() *stageLog { return c.stages }

func (c *inproc) hopLog() *hopLog { return c.hops }

func (c *inproc) Len() int { return c.net.Len() }

func (c *inproc) Running(i int) bool { return c.net.Node(i) != nil }

func (c *inproc) PeerID(i int) string { return c.net.ID(i).String() }

func (c *inproc) mgr(i int) (*rooms.Manager, error) {
	n := c.net.Node(i)
	if n == nil {
		return nil, fmt.Errorf("node %d is not running", i)
	}
	return n.Rooms(), nil
}

func (c *inproc) OpenRoom(ctx context.Context, name string) (string, error) {
	var members []int
	for i := 1; i < c.Len(); i++ {
		if c.Running(i) {
			members = append(members, i)
		}
	}
	return c.OpenRoomOf(ctx, name, 0, members)
}

func (c *inproc) OpenRoomOf(ctx context.Context, name string, creator int, members []int) (string, error) {
	m0, err := c.mgr(creator)
	if err != nil {
		return "", err
	}
	id, err := m0.Create(ctx, name, agent)
	if err != nil {
		return "", err
	}
	n0 := c.net.Node(creator)
	h0 := n0.Host()
	var invited []int
	for _, i := range members {
		if i == creator || !c.Running(i) {
			continue
		}
		invited = append(invited, i)
		pid := c.net.ID(i)
		// Many nodes starting at once on a loaded machine may time out
		// each other's handshakes; dial again (past the dial back-off)
		// until connected, for a minute.
		var lastErr error
		connected := nodetest.Poll(60*time.Second, func() bool {
			if h0.Network().Connectedness(pid) == network.Connected {
				return true
			}
			n := c.net.Node(i)
			if n == nil {
				return false
			}
			cctx, cancel := context.WithTimeout(network.WithForceDirectDial(ctx, "testnet"), 15*time.Second)
			lastErr = n0.Connect(cctx, peer.AddrInfo{ID: pid, Addrs: n.Host().Addrs()})
			cancel()
			if lastErr != nil {
				c.t.Logf("node %d dials node %d: %v", creator, i, lastErr)
			}
			return lastErr == nil
		})
		if !connected {
			return "", fmt.Errorf("node %d did not connect to node %d: %v", i, creator, lastErr)
		}
		if _, err := m0.Invite(ctx, id, pid, agent); err != nil {
			return "", fmt.Errorf("invite node %d: %w", i, err)
		}
	}
	for _, i := range invited {
		err := poll(ctx, 30*time.Second, func() bool { return c.isMember(i, id) }, fmt.Sprintf("node %d to learn it is a member", i))
		if err != nil {
			return string(id), err
		}
	}
	return string(id), nil
}

// isMember reports whether node i knows it is a member of room id.
func (c *inproc) isMember(i int, id identity.RoomID) bool {
	n := c.net.Node(i)
	if n == nil {
		return false
	}
	ms, err := n.Rooms().Members(id)
	return err == nil && slices.Contains(ms, n.ID())
}

func (c *inproc) CreateRoom(ctx context.Context, i int, name string) (string, error) {
	m, err := c.mgr(i)
	if err != nil {
		return "", err
	}
	id, err := m.Create(ctx, name, agent)
	return string(id), err
}

func (c *inproc) Say(ctx context.Context, i int, room, text string) error {
	m, err := c.mgr(i)
	if err != nil {
		return err
	}
	t0 := time.Now()
	id, err := m.Say(ctx, identity.RoomID(room), rooms.SayArgs{Agent: agent, Text: text})
	if err == nil {
		c.stages.said(i, id, t0)
	}
	return err
}

func (c *inproc) Subscribe(i int, room string, fn func(string, time.Time)) (func(), error) {
	m, err := c.mgr(i)
	if err != nil {
		return nil, err
	}
	ch, stop, err := m.Subscribe(identity.RoomID(room), subscribeBuf)
	if err != nil {
		return nil, err
	}
	follow(&c.subs, ch, fn)
	return stop, nil
}

// testnetGoroutines is how many goroutines of the process are the
// testnet's subscriptions, not the nodes': a measure of the nodes takes
// them off.
func (c *inproc) testnetGoroutines() int { return c.subs.count() }

// follow hands the texts of the views on ch to fn with their arrival
// times, in goroutines started through g, until ch is closed.
func follow(g *goroutines, ch <-chan rooms.View, fn func(string, time.Time)) {
	q := &arrivals{ready: make(chan struct{}, 1)}
	g.start(func() {
		for v := range ch {
			q.push(v.Text, time.Now())
		}
		q.close()
	})
	g.start(func() { q.drain(fn) })
}

// goroutines starts goroutines and counts those still running.
type goroutines struct{ n atomic.Int64 }

func (g *goroutines) start(f func()) {
	g.n.Add(1)
	go func() {
		defer g.n.Add(-1)
		f()
	}()
}

func (g *goroutines) count() int { return int(g.n.Load()) }

// subscribeBuf is the channel buffer of an in-process subscription. The
// room cuts off a listener whose buffer is full, so a goroutine does
// nothing but move views from it onto an arrivals queue, which grows only
// as far as the recording falls behind. A buffer big enough for any burst
// would instead be allocated whole for every subscription (a View is about
// 200 bytes: 1<<16 of them are 13 MiB, 1.3 GiB for the soak's 100
// subscriptions), which the Go heap counts as live and the GC doubles in
// its heap goal, and which the ring touches page by page as events go
// round it.
const subscribeBuf = 1024

// arrivals is an unbounded FIFO of received texts and their arrival times.
type arrivals struct {
	mu     sync.Mutex // protects q, closed
	q      []arrival
	closed bool
	ready  chan struct{} // a token when q has items or closed is set
}

type arrival struct {
	text string
	at   time.Time
}

func (a *arrivals) push(text string, at time.Time) {
	a.mu.Lock()
	a.q = append(a.q, arrival{text, at})
	a.mu.Unlock()
	a.wake()
}

func (a *arrivals) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.wake()
}

func (a *arrivals) wake() {
	select {
	case a.ready <- struct{}{}:
	default:
	}
}

// drain hands every arrival to fn in order, until the queue is closed and
// empty.
func (a *arrivals) drain(fn func(string, time.Time)) {
	for range a.ready {
		a.mu.Lock()
		batch, closed := a.q, a.closed
		a.q = nil
		a.mu.Unlock()
		for _, x := range batch {
			fn(x.text, x.at)
		}
		if closed {
			return
		}
	}
}

func (c *inproc) Count(_ context.Context, i int, room string) (uint64, error) {
	m, err := c.mgr(i)
	if err != nil {
		return 0, err
	}
	in, err := m.Get(identity.RoomID(room))
	return in.Events, err
}

func (c *inproc) VV(_ context.Context, i int, room string) (map[string]uint64, error) {
	m, err := c.mgr(i)
	if err != nil {
		return nil, err
	}
	vv, err := m.VersionVector(identity.RoomID(room))
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(vv))
	for a, s := range vv {
		out[a.String()] = s
	}
	return out, nil
}

func (c *inproc) Log(_ context.Context, i int, room string) ([]entry, error) {
	m, err := c.mgr(i)
	if err != nil {
		return nil, err
	}
	var pages [][]rooms.View
	var before *rooms.ID
	total := 0
	for {
		vs, err := m.Log(identity.RoomID(room), 10000, before)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			break
		}
		pages = append(pages, vs)
		total += len(vs)
		first := vs[0].ID
		before = &first
		if len(vs) < 10000 {
			break
		}
	}
	out := make([]entry, 0, total)
	for k := len(pages) - 1; k >= 0; k-- {
		for _, v := range pages[k] {
			out = append(out, entry{ID: v.ID.String(), Text: v.Text, Author: v.Author.String(), Seq: v.Seq})
		}
	}
	return out, nil
}

func (c *inproc) Tail(_ context.Context, i int, room string, n int) ([]entry, error) {
	m, err := c.mgr(i)
	if err != nil {
		return nil, err
	}
	vs, err := m.Log(identity.RoomID(room), n, nil)
	if err != nil {
		return nil, err
	}
	out := make([]entry, len(vs))
	for k, v := range vs {
		out[k] = entry{ID: v.ID.String(), Text: v.Text, Author: v.Author.String(), Seq: v.Seq}
	}
	return out, nil
}

func (c *inproc) Crash(i int) (err error) {
	defer catch(&err)
	c.net.Crash(i)
	return nil
}

func (c *inproc) Restart(_ context.Context, i int) (err error) {
	defer catch(&err)
	c.net.Restart(i)
	return nil
}

func (c *inproc) Partition(groups ...[]int) error {
	c.net.Partition(groups...)
	return nil
}

func (c *inproc) Heal(context.Context) error {
	c.net.Heal()
	return nil
}

func (c *inproc) Close() error {
	c.t.close()
	return nil
}

// keyCID turns a discovery key into the CID that is provided.
func keyCID(key string) (cid.Cid, error) {
	h, err := multihash.Sum([]byte("parley-testnet/"+key), multihash.SHA2_256, -1)
	if err != nil {
		return cid.Undef, err
	}
	return cid.NewCidV1(cid.Raw, h), nil
}

func (c *inproc) Provide(ctx context.Context, i int, key string) error {
	n := c.net.Node(i)
	if n == nil {
		return fmt.Errorf("node %d is not running", i)
	}
	k, err := keyCID(key)
	if err != nil {
		return err
	}
	return n.DHT().Provide(ctx, k, true)
}

func (c *inproc) Find(ctx context.Context, j int, key string, provider int) (bool, error) {
	n := c.net.Node(j)
	if n == nil {
		return false, fmt.Errorf("node %d is not running", j)
	}
	k, err := keyCID(key)
	if err != nil {
		return false, err
	}
	want := c.net.ID(provider)
	for ai := range n.DHT().FindProvidersAsync(ctx, k, 0) {
		if ai.ID == want {
			return true, nil
		}
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return false, err
	}
	return false, nil
}

func (c *inproc) Lookup(ctx context.Context, j int, key string) (int, error) {
	n := c.net.Node(j)
	if n == nil {
		return 0, fmt.Errorf("node %d is not running", j)
	}
	ps, err := n.DHT().GetClosestPeers(ctx, "parley-testnet/"+key)
	return len(ps), err
}

func (c *inproc) RoutingTable(i int) int {
	n := c.net.Node(i)
	if n == nil {
		return 0
	}
	return n.DHT().RoutingTable().Size()
}
