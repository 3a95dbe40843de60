// Package nodetest runs real Parley nodes in one process on 127.0.0.1, in the
// manner of net/http/httptest: each node has its own temporary home, node 0
// is the bootstrap peer of the others, and the harness can partition and
// heal the network, crash and restart nodes, and wait for conditions with a
// deadline. Tests and cmd-testnet build on it.
package nodetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/poll"
	"github.com/parley-mesh/parley/node"
)

// TB is the part of testing.TB the harness needs, so that cmd-testnet can
// drive it outside of tests.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

var _ TB = (testing.TB)(nil)

// Option changes how a Net is built.
type Option func(*options)

type options struct {
	configure func(i int, c *node.Config)
	ahead     map[int]time.Duration // WithClockAhead: node → how far its room clock runs ahead
	quic      bool
	mock      *mockNet
}

// mockNet is the in-memory network of WithMocknet.
type mockNet struct {
	mu     sync.Mutex // serializes adding a peer and linking it to the others
	mn     mocknet.Mocknet
	closed sync.Once
}

// WithConfig lets the caller adjust each node's Config before it starts
// (and again before each restart).
func WithConfig(f func(i int, c *node.Config)) Option {
	return func(o *options) { o.configure = f }
}

// WithClockAhead makes node i's room clock (node.Config.RoomClock) run d
// ahead of this machine's (behind, for a negative d), from its start and
// across restarts. It is applied after WithConfig, whatever their order.
func WithClockAhead(i int, d time.Duration) Option {
	return func(o *options) {
		if o.ahead == nil {
			o.ahead = make(map[int]time.Duration)
		}
		o.ahead[i] = d
	}
}

// WithQUIC makes nodes listen on QUIC as well as TCP.
func WithQUIC() Option { return func(o *options) { o.quic = true } }

// WithMocknet runs the nodes on go-libp2p's mocknet, an in-memory network
// in which every write on a link arrives latency later (a one-way delay),
// instead of TCP on 127.0.0.1. Every node is linked to every other. It is
// for measurements: Partition, BlockDirect and the gater have no effect
// there, and Restart is not supported (Fatalf).
func WithMocknet(latency time.Duration) Option {
	return func(o *options) {
		mn := mocknet.New()
		mn.SetLinkDefaults(mocknet.LinkOptions{Latency: latency})
		o.mock = &mockNet{mn: mn}
	}
}

// host adds node i's host to the mocknet, linked to every peer already
// there.
func (m *mockNet) host(i int, addr ma.Multiaddr, key crypto.PrivKey) (host.Host, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if m.mn.Host(id) != nil {
		return nil, fmt.Errorf("nodetest: node %d is already on the mocknet (restarts are not supported there)", i)
	}
	h, err := m.mn.AddPeer(key, addr)
	if err != nil {
		return nil, err
	}
	for _, p := range m.mn.Peers() {
		if p == id {
			continue
		}
		if _, err := m.mn.LinkPeers(id, p); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// Net is a set of running nodes.
type Net struct {
	t    TB
	opts options

	mu     sync.Mutex // protects nodes, listen, groups
	nodes  []*node.Node
	homes  []string
	ids    []peer.ID
	listen [][]ma.Multiaddr    // the addresses each node listened on, reused on restart
	groups map[peer.ID]int     // nil: no partition
	direct map[[2]peer.ID]bool // pairs that may meet only through a relay
	// secured, when set (by this package's tests), runs each time the
	// gater lets a connection's handshake through, before the connection
	// is added to the node's swarm.
	secured func(self, p peer.ID)
}

// Start starts n nodes and registers their shutdown with t.Cleanup. Node 0
// starts first; the others bootstrap from it.
func Start(t TB, n int, opts ...Option) *Net {
	t.Helper()
	if n < 1 {
		t.Fatalf("nodetest: need at least one node, got %d", n)
	}
	nt := &Net{t: t, nodes: make([]*node.Node, n), homes: make([]string, n), ids: make([]peer.ID, n), listen: make([][]ma.Multiaddr, n)}
	for _, o := range opts {
		o(&nt.opts)
	}
	base := t.TempDir()
	t.Cleanup(nt.Close) // registered after TempDir: runs before the folder is removed
	for i := range n {
		nt.homes[i] = filepath.Join(base, fmt.Sprintf("n%d", i))
	}
	if err := nt.startNode(0, true); err != nil {
		t.Fatalf("nodetest: start node 0: %v", err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = nt.startNode(i, true)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("nodetest: start node %d: %v", i, err)
		}
	}
	return nt
}

func (nt *Net) startNode(i int, bootstrap bool) error {
	nt.mu.Lock()
	listen := nt.listen[i]
	var boot []peer.AddrInfo
	if b := nt.bootstrapFor(i); b >= 0 && bootstrap {
		boot = []peer.AddrInfo{{ID: nt.ids[b], Addrs: nt.nodes[b].Host().Addrs()}}
	}
	nt.mu.Unlock()
	if listen == nil {
		listen = []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/0")}
		if nt.opts.quic {
			listen = append(listen, ma.StringCast("/ip4/127.0.0.1/udp/0/quic-v1"))
		}
	}
	cfg := node.Config{
		Home:        nt.homes[i],
		Handle:      fmt.Sprintf("node%d", i),
		ListenAddrs: listen,
		Bootstrap:   boot,
		ConnLow:     200,
		ConnHigh:    400,
	}
	if lvl := os.Getenv("PARLEY_TEST_LOG"); lvl != "" {
		var l slog.Level
		_ = l.UnmarshalText([]byte(lvl))
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})).With("nodetest", i)
	}
	if nt.opts.configure != nil {
		nt.opts.configure(i, &cfg)
	}
	if d, ok := nt.opts.ahead[i]; ok {
		cfg.RoomClock = func() time.Time { return time.Now().Add(d) }
	}
	if m := nt.opts.mock; m != nil {
		addr := ma.StringCast(fmt.Sprintf("/ip4/100.64.%d.%d/tcp/4190", i/250, i%250+1))
		cfg.ListenAddrs = []ma.Multiaddr{addr}
		cfg.NewHost = func(key crypto.PrivKey) (host.Host, error) { return m.host(i, addr, key) }
	}
	g := &gater{net: nt}
	cfg.Gater = g
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	g.self = n.ID()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		return err
	}
	if nt.opts.mock == nil {
		n.Host().Network().Notify(&network.NotifyBundle{ConnectedF: g.connected})
	}
	nt.mu.Lock()
	nt.nodes[i] = n
	nt.ids[i] = n.ID()
	nt.listen[i] = nil
	for _, a := range n.Host().Network().ListenAddresses() {
		if _, err := a.ValueForProtocol(ma.P_CIRCUIT); err != nil { // the relay transport listens by itself
			nt.listen[i] = append(nt.listen[i], a)
		}
	}
	nt.mu.Unlock()
	return nil
}

// bootstrapFor picks the running node that node i bootstraps from: node 0,
// or the first other running node. Callers hold nt.mu.
func (nt *Net) bootstrapFor(i int) int {
	for j, n := range nt.nodes {
		if j != i && n != nil {
			return j
		}
	}
	return -1
}

// Len is the number of node slots (crashed nodes included).
func (nt *Net) Len() int { return len(nt.nodes) }

// Node returns node i, or nil while it is crashed.
func (nt *Net) Node(i int) *node.Node {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return nt.nodes[i]
}

// ID returns node i's peer ID (kept across restarts).
func (nt *Net) ID(i int) peer.ID {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return nt.ids[i]
}

// Home returns node i's home folder.
func (nt *Net) Home(i int) string { return nt.homes[i] }

// Crash closes node i, keeping its home for Restart.
func (nt *Net) Crash(i int) {
	nt.t.Helper()
	nt.mu.Lock()
	n := nt.nodes[i]
	nt.nodes[i] = nil
	nt.mu.Unlock()
	if n == nil {
		nt.t.Fatalf("nodetest: node %d is not running", i)
	}
	if err := n.Close(); err != nil {
		nt.t.Logf("nodetest: close node %d: %v", i, err)
	}
}

// Restart reopens node i from its home, on the addresses it had, and
// bootstraps it from another running node.
func (nt *Net) Restart(i int) *node.Node {
	nt.t.Helper()
	if nt.Node(i) != nil {
		nt.t.Fatalf("nodetest: node %d is running; Crash it first", i)
	}
	if err := nt.restartNode(i, true); err != nil {
		nt.t.Fatalf("nodetest: restart node %d: %v", i, err)
	}
	nt.clearBackoff(i)
	return nt.Node(i)
}

// restartNode starts node i again on the addresses it had. Tests run side
// by side, and while the node was down the kernel may have handed one of
// its ports to another test's socket: the start is tried again for a
// while, and then on ports of its own, said in the log.
func (nt *Net) restartNode(i int, bootstrap bool) error {
	taken := func(err error) bool {
		return errors.Is(err, node.ErrListen) && strings.Contains(err.Error(), "address already in use")
	}
	var err error
	if poll.Until(3*time.Second, func() bool { err = nt.startNode(i, bootstrap); return !taken(err) }) {
		return err
	}
	nt.t.Logf("nodetest: node %d's port is another socket's (%v): it restarts on new ports", i, err)
	nt.mu.Lock()
	nt.listen[i] = nil
	nt.mu.Unlock()
	return nt.startNode(i, bootstrap)
}

// clearBackoff forgets the other nodes' failed dials of node i, back on
// the addresses it had: a dial while it was down would otherwise be
// refused as "dial backoff" for a few seconds after it is up again.
func (nt *Net) clearBackoff(i int) {
	nt.mu.Lock()
	nodes := append([]*node.Node(nil), nt.nodes...)
	nt.mu.Unlock()
	for j, n := range nodes {
		if j == i || n == nil {
			continue
		}
		if sw, ok := n.Host().Network().(*swarm.Swarm); ok {
			sw.Backoff().Clear(nt.ID(i))
		}
	}
}

// RestartAlone reopens node i from its home, on the addresses it had, with
// no bootstrap peer: it finds its peers again only through what it stored.
func (nt *Net) RestartAlone(i int) *node.Node {
	nt.t.Helper()
	if nt.Node(i) != nil {
		nt.t.Fatalf("nodetest: node %d is running; Crash it first", i)
	}
	if err := nt.restartNode(i, false); err != nil {
		nt.t.Fatalf("nodetest: restart node %d: %v", i, err)
	}
	nt.clearBackoff(i)
	return nt.Node(i)
}

// Close stops every running node. It is idempotent.
func (nt *Net) Close() {
	nt.mu.Lock()
	nodes := append([]*node.Node(nil), nt.nodes...)
	for i := range nt.nodes {
		nt.nodes[i] = nil
	}
	nt.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Close()
		}()
	}
	wg.Wait()
	if m := nt.opts.mock; m != nil {
		m.closed.Do(func() {
			if err := m.mn.Close(); err != nil {
				nt.t.Logf("nodetest: close the mocknet: %v", err)
			}
		})
	}
}

// Partition splits the network: nodes in different groups cannot connect,
// and their live connections are closed. Nodes in no group form one more
// group together.
func (nt *Net) Partition(groups ...[]int) {
	nt.mu.Lock()
	nt.groups = make(map[peer.ID]int)
	for g, members := range groups {
		for _, i := range members {
			nt.groups[nt.ids[i]] = g + 1
		}
	}
	nodes := append([]*node.Node(nil), nt.nodes...)
	nt.mu.Unlock()
	for _, n := range nodes {
		if n == nil {
			continue
		}
		for _, p := range n.Host().Network().Peers() {
			if !nt.allowed(n.ID(), p) {
				_ = n.Host().Network().ClosePeer(p)
			}
		}
	}
}

// Heal removes the partition and reconnects every pair of running nodes that
// is not connected.
func (nt *Net) Heal() {
	nt.mu.Lock()
	nt.groups = nil
	nodes := append([]*node.Node(nil), nt.nodes...)
	nt.mu.Unlock()
	nt.connectAll(nodes)
}

// ConnectAll connects every pair of running nodes.
func (nt *Net) ConnectAll() {
	nt.mu.Lock()
	nodes := append([]*node.Node(nil), nt.nodes...)
	nt.mu.Unlock()
	nt.connectAll(nodes)
}

func (nt *Net) connectAll(nodes []*node.Node) {
	var wg sync.WaitGroup
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if a == nil || b == nil || a.Host().Network().Connectedness(b.ID()) == network.Connected {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Host().Addrs()}); err != nil {
					nt.t.Logf("nodetest: connect %s → %s: %v", a.ID(), b.ID(), err)
				}
			}()
		}
	}
	wg.Wait()
}

// Befriend makes node req ask node appr for contact, which appr approves,
// through each node's contact service; it returns once both hold the
// contact as active (each has signed its half of the certificate). Failures
// go to t, which may be a subtest's.
func (nt *Net) Befriend(t TB, req, appr int) {
	t.Helper()
	ctx := context.Background()
	state := func(i, j int) consent.State {
		c, ok := nt.Node(i).Contacts().Book().Get(nt.ID(j), time.Now())
		if !ok {
			return ""
		}
		return c.State
	}
	res, err := nt.Node(req).Contacts().Request(ctx, peer.AddrInfo{ID: nt.ID(appr), Addrs: nt.Node(appr).Host().Addrs()}, "hello")
	if err != nil {
		t.Fatalf("nodetest: node %d asks node %d: %v", req, appr, err)
	}
	WaitFor(t, 20*time.Second, func() bool { return state(appr, req) == consent.StatePendingIn },
		"node %d to see node %d's request", appr, req)
	if _, err := nt.Node(appr).Contacts().Approve(ctx, res.ID, 0); err != nil {
		t.Fatalf("nodetest: node %d approves node %d: %v", appr, req, err)
	}
	WaitFor(t, 20*time.Second, func() bool {
		return state(req, appr) == consent.StateActive && state(appr, req) == consent.StateActive
	}, "nodes %d and %d to be active contacts", req, appr)
}

// WaitRelayHeld waits until node a holds a reservation on node r's relay.
func (nt *Net) WaitRelayHeld(a, r int) {
	nt.WaitFor(30*time.Second, func() bool {
		for _, rs := range nt.Node(a).Relays() {
			if rs.Relay == nt.ID(r) && rs.Held {
				return true
			}
		}
		return false
	}, "node %d to hold a reservation on node %d", a, r)
}

// BlockDirect lets nodes a and b reach each other only through a relay, as
// two nodes behind NATs that forbid hole punching: direct dials between them
// fail and direct connections are refused; live ones are closed.
func (nt *Net) BlockDirect(a, b int) {
	nt.mu.Lock()
	if nt.direct == nil {
		nt.direct = make(map[[2]peer.ID]bool)
	}
	pa, pb := nt.ids[a], nt.ids[b]
	nt.direct[[2]peer.ID{pa, pb}] = true
	nt.direct[[2]peer.ID{pb, pa}] = true
	na := nt.nodes[a]
	nt.mu.Unlock()
	if na != nil {
		_ = na.Host().Network().ClosePeer(pb)
	}
}

func (nt *Net) directBlocked(a, b peer.ID, addr ma.Multiaddr) bool {
	if addr != nil {
		if _, err := addr.ValueForProtocol(ma.P_CIRCUIT); err == nil {
			return false
		}
	}
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return nt.direct[[2]peer.ID{a, b}]
}

// allowed reports whether a and b may talk under the current partition.
func (nt *Net) allowed(a, b peer.ID) bool {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if nt.groups == nil {
		return true
	}
	return nt.groups[a] == nt.groups[b]
}

// WaitFor polls cond until it holds, failing the test after timeout. Use it
// instead of sleeping.
func WaitFor(t TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("nodetest: timed out after %v waiting for "+format, append([]any{timeout}, args...)...)
	}
}

// Poll polls cond until it holds (true) or timeout passes (false).
func Poll(timeout time.Duration, cond func() bool) bool { return poll.Until(timeout, cond) }

// WaitFor is WaitFor on the Net's test.
func (nt *Net) WaitFor(timeout time.Duration, cond func() bool, format string, args ...any) {
	nt.t.Helper()
	WaitFor(nt.t, timeout, cond, format, args...)
}

// WaitRouting waits until each running node's DHT routing table holds at
// least min(Len()-1, 8) peers. A node short of them is asked to refresh its
// table rather than left to its next periodic refresh: nodes that bootstrap
// together from one peer in a loaded run may otherwise wait minutes to
// learn of each other.
func (nt *Net) WaitRouting() {
	nt.t.Helper()
	want := min(nt.Len()-1, 8)
	nt.WaitFor(60*time.Second, func() bool {
		for i := range nt.Len() {
			n := nt.Node(i)
			if n == nil {
				continue
			}
			if n.DHT().RoutingTable().Size() < want {
				select {
				case <-n.DHT().RefreshRoutingTable():
				case <-time.After(5 * time.Second):
				}
				return false
			}
		}
		return true
	}, "DHT routing tables of %d nodes to hold %d peers", nt.Len(), want)
}

// WaitConnected waits for nodes a and b to be connected. Tests that need
// the connection, not the DHT's way to it, call it: when the nodes have not
// met through the DHT in 15 s (in a loaded run, two nodes that bootstrap
// together from one peer can wait for its next refresh), a dials b, which
// is logged.
func (nt *Net) WaitConnected(a, b int) {
	nt.t.Helper()
	connected := func() bool {
		return nt.Node(a).Host().Network().Connectedness(nt.ID(b)) == network.Connected
	}
	if Poll(15*time.Second, connected) {
		return
	}
	nt.t.Logf("nodetest: node %d and node %d did not meet through the DHT in 15 s: dialled", a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := nt.Node(a).Connect(ctx, peer.AddrInfo{ID: nt.ID(b), Addrs: nt.Node(b).Host().Addrs()}); err != nil {
		nt.t.Logf("nodetest: dial: %v", err)
	}
	nt.WaitFor(15*time.Second, connected, "node %d connected to node %d", a, b)
}

// TempHome returns a fresh home folder path under the test's temp dir.
func TempHome(t TB) string {
	h := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(h, 0o700); err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	return h
}

// gater refuses connections across a partition.
type gater struct {
	net  *Net
	self peer.ID
}

func (g *gater) InterceptPeerDial(p peer.ID) bool { return g.net.allowed(g.self, p) }
func (g *gater) InterceptAddrDial(p peer.ID, a ma.Multiaddr) bool {
	return g.net.allowed(g.self, p) && !g.net.directBlocked(g.self, p, a)
}
func (g *gater) InterceptAccept(network.ConnMultiaddrs) bool { return true }
func (g *gater) InterceptSecured(_ network.Direction, p peer.ID, c network.ConnMultiaddrs) bool {
	if !g.net.allowed(g.self, p) || g.net.directBlocked(g.self, p, c.RemoteMultiaddr()) {
		return false
	}
	g.net.mu.Lock()
	hook := g.net.secured
	g.net.mu.Unlock()
	if hook != nil {
		hook(g.self, p)
	}
	return true
}
func (g *gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// connected closes a connection the rules forbid once its node added it.
// The gater checks a connection during its handshake, and Partition and
// BlockDirect close the connections their nodes hold when they change the
// rules: a connection that passed the gater at both ends just before, and
// that one end added just after that end's live ones were closed, was
// missed and stayed open for good (TestRelayRefusedDialSaysWhy waited 10 s
// for it to close, 1 run in 40 to 75). The swarm tells of a connection
// after adding it, so one added after the rules changed is seen here.
func (g *gater) connected(_ network.Network, c network.Conn) {
	p := c.RemotePeer()
	if !g.net.allowed(g.self, p) || g.net.directBlocked(g.self, p, c.RemoteMultiaddr()) {
		_ = c.Close()
	}
}
