package reconnect

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// Store is where address records live; internal/store's DB implements it.
type Store interface {
	// ScanFrom calls fn for the keys with prefix from start (nil: the
	// first) in key order, or reverse order, until fn returns false.
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
	// Apply writes ops atomically; with durable set it returns once they
	// are on disk.
	Apply(ops []schema.Op, durable bool) error
}

// Config configures a Service. Zero values are documented.
type Config struct {
	Host  host.Host // required
	Store Store     // required
	// Peers returns the peers to keep connected (contacts, room members).
	// It is called often; it must be cheap. Required.
	Peers func() []peer.ID
	// FindPeer looks a peer up when its known addresses fail (the node
	// passes its DHT's FindPeer). Nil: known addresses only.
	FindPeer func(ctx context.Context, p peer.ID) (peer.AddrInfo, error)
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
	// Registry receives metrics; nil means none are exported.
	Registry prometheus.Registerer
	// MinBackoff and MaxBackoff bound the wait between attempts on one
	// peer. Zero means 1 s and 1 minute.
	MinBackoff, MaxBackoff time.Duration
	// DialTimeout bounds one attempt. Zero means 15 s.
	DialTimeout time.Duration
	// Parallel is how many peers are dialled at once. Zero means 16.
	Parallel int
}

// refreshEvery is how often the wanted set is read again even when nothing
// happened (a new contact, a new room member).
const refreshEvery = 5 * time.Second

// Service keeps the wanted peers connected. Run owns its state.
type Service struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	statsMu sync.Mutex // protects stats
	stats   Stats

	saves   chan chan struct{} // Save's requests to Run
	started chan struct{}      // closed when Run starts
	ended   chan struct{}      // closed when Run returns
	runOnce sync.Once          // closes started
}

// Stats is what the service did since start.
type Stats struct {
	Stored    int // peers with a stored address record
	Wanted    int // peers it keeps connected
	Connected int // of those, connected now
	Dials     int // attempts
	Failures  int // failed attempts
}

type peerState struct {
	next    time.Time     // not before
	backoff time.Duration // wait after the next failure
	dialing bool
	stored  []byte // the record's addresses as last written, for change detection
}

type dialResult struct {
	p   peer.ID
	err error
}

// New checks cfg. It starts nothing.
func New(cfg Config) (*Service, error) {
	if cfg.Host == nil || cfg.Store == nil || cfg.Peers == nil {
		return nil, errors.New("reconnect: config needs Host, Store and Peers")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 15 * time.Second
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 16
	}
	return &Service{cfg: cfg, log: cfg.Logger, m: newMetrics(cfg.Registry),
		saves: make(chan chan struct{}), started: make(chan struct{}), ended: make(chan struct{})}, nil
}

// Save stores where each wanted peer that is connected now was reached.
// Run notes a peer that was connected before it became wanted (a new
// contact, a new room member) only at its next refresh, up to refreshEvery
// later: a node stopped before that would not know, after a restart, where
// to find it. The node calls Save as it stops. It returns once done, or
// when ctx ends or Run has returned; at once if Run never started (a node
// whose start failed: there is nothing it connected to since the last
// save).
func (s *Service) Save(ctx context.Context) error {
	select {
	case <-s.started:
	default:
		return nil
	}
	done := make(chan struct{})
	select {
	case s.saves <- done:
	case <-s.ended:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reconnect: save: %w", ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-s.ended:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reconnect: save: %w", ctx.Err())
	}
}

// Stats returns what the service did since start.
func (s *Service) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.stats
}

// Run loads the stored addresses into the peerstore, then keeps the wanted
// peers connected until ctx ends. It returns nil when ctx ends. Call it
// once.
func (s *Service) Run(ctx context.Context) error {
	s.runOnce.Do(func() { close(s.started) })
	defer close(s.ended)
	h := s.cfg.Host
	sub, err := h.EventBus().Subscribe([]any{
		new(event.EvtPeerIdentificationCompleted),
		new(event.EvtPeerConnectednessChanged),
		new(event.EvtLocalAddressesUpdated),
	})
	if err != nil {
		return fmt.Errorf("reconnect: subscribe: %w", err)
	}
	state := make(map[peer.ID]*peerState)
	if err := s.load(state); err != nil {
		s.log.Error("stored peer addresses could not all be read", "err", err)
	}
	results := make(chan dialResult)
	var wg sync.WaitGroup
	// Close the subscription (which drains it) before waiting for the
	// dials: a dial that looks its peer up in the DHT subscribes to the
	// bus too, and the bus's emitter, blocked on an undrained channel,
	// would hold up that dial's unsubscribing and so this wait.
	defer func() {
		sub.Close()
		wg.Wait()
	}()
	inflight := 0
	wanted := make(map[peer.ID]bool)
	refresh := func(now time.Time) {
		clear(wanted)
		for _, p := range s.cfg.Peers() {
			if p != h.ID() && p != "" {
				wanted[p] = true
			}
		}
		var drop []schema.Op
		for p, st := range state {
			if !wanted[p] && !st.dialing {
				if st.stored != nil {
					drop = append(drop, schema.Op{Key: schema.PeerAddrs([]byte(p)), Delete: true})
				}
				delete(state, p)
			}
		}
		if len(drop) > 0 {
			if err := s.cfg.Store.Apply(drop, false); err != nil {
				s.log.Warn("dropping old peer addresses failed", "err", err)
			}
		}
		for p := range wanted {
			st := state[p]
			if st == nil {
				st = &peerState{next: now, backoff: s.cfg.MinBackoff}
				state[p] = st
			}
			if st.stored == nil {
				// Wanted since it connected (a new contact): note where
				// it is now.
				if conns := h.Network().ConnsToPeer(p); len(conns) > 0 {
					s.remember(p, st, conns[0], h.Peerstore().Addrs(p))
				}
			}
		}
	}
	publish := func() {
		st := Stats{Wanted: len(wanted)}
		for p, ps := range state {
			if ps.stored != nil {
				st.Stored++
			}
			if wanted[p] && connected(h, p) {
				st.Connected++
			}
		}
		s.statsMu.Lock()
		st.Dials, st.Failures = s.stats.Dials, s.stats.Failures
		s.stats = st
		s.statsMu.Unlock()
		s.m.wanted.Set(float64(st.Wanted))
		s.m.connected.Set(float64(st.Connected))
	}
	dialDue := func(now time.Time) time.Time {
		next := now.Add(refreshEvery)
		for p := range wanted {
			st := state[p]
			if st.dialing || connected(h, p) {
				continue
			}
			if st.next.After(now) {
				if st.next.Before(next) {
					next = st.next
				}
				continue
			}
			if inflight >= s.cfg.Parallel {
				break
			}
			st.dialing = true
			inflight++
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.dial(ctx, p)
				select {
				case results <- dialResult{p, err}:
				case <-ctx.Done():
				}
			}()
		}
		return next
	}

	now := time.Now()
	refresh(now)
	lastRefresh := now
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		now = time.Now()
		if now.Sub(lastRefresh) >= refreshEvery {
			refresh(now)
			lastRefresh = now
		}
		next := dialDue(now)
		publish()
		timer.Reset(max(time.Until(next), 10*time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case done := <-s.saves:
			now := time.Now()
			refresh(now)
			lastRefresh = now
			close(done)
		case r := <-results:
			inflight--
			st := state[r.p]
			if st == nil {
				continue
			}
			st.dialing = false
			s.statsMu.Lock()
			s.stats.Dials++
			if r.err != nil {
				s.stats.Failures++
			}
			s.statsMu.Unlock()
			if r.err != nil {
				s.m.dials.WithLabelValues("failed").Inc()
				s.log.Debug("redial failed", "remote", r.p.String(), "err", r.err, "retry_in", st.backoff.String())
				st.next = time.Now().Add(st.backoff)
				st.backoff = min(2*st.backoff, s.cfg.MaxBackoff)
			} else {
				s.m.dials.WithLabelValues("ok").Inc()
				st.backoff = s.cfg.MinBackoff
			}
		case e, ok := <-sub.Out():
			if !ok {
				return nil
			}
			switch e := e.(type) {
			case event.EvtPeerIdentificationCompleted:
				if wanted[e.Peer] {
					s.remember(e.Peer, state[e.Peer], e.Conn, e.ListenAddrs)
				}
			case event.EvtPeerConnectednessChanged:
				st := state[e.Peer]
				if st == nil || !wanted[e.Peer] {
					continue
				}
				switch e.Connectedness {
				case network.Connected, network.Limited:
					st.backoff = s.cfg.MinBackoff
				case network.NotConnected:
					// Give the peer a moment (it may be restarting).
					st.next = time.Now().Add(st.backoff)
				}
			case event.EvtLocalAddressesUpdated:
				if !moved(e) {
					continue
				}
				// The node moved or its addresses changed: try everyone now.
				for _, st := range state {
					st.next = time.Now()
					st.backoff = s.cfg.MinBackoff
				}
			}
		}
	}
}

// load puts the stored addresses into the peerstore and state.
func (s *Service) load(state map[peer.ID]*peerState) error {
	var errs []error
	err := s.cfg.Store.ScanFrom(schema.PeerAddrsPrefix(), nil, false, func(k, v []byte) bool {
		rest := k[len(schema.PeerAddrsPrefix()):]
		if len(rest) < 1 || int(rest[0]) != len(rest)-1 {
			errs = append(errs, fmt.Errorf("%w: key %q", ErrBadRecord, k))
			return true
		}
		p, err := peer.IDFromBytes(rest[1:])
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: key %q: %v", ErrBadRecord, k, err))
			return true
		}
		_, addrs, err := decodeRecord(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("peer %s: %w", p, err))
			return true
		}
		s.cfg.Host.Peerstore().AddAddrs(p, addrs, peerstore.AddressTTL)
		state[p] = &peerState{backoff: s.cfg.MinBackoff, stored: joinAddrs(addrs)}
		return true
	})
	return errors.Join(append(errs, err)...)
}

// remember stores where p was reached, when that changed.
func (s *Service) remember(p peer.ID, st *peerState, c network.Conn, listen []ma.Multiaddr) {
	if st == nil {
		return
	}
	var addrs []ma.Multiaddr
	if c != nil && c.Stat().Direction == network.DirOutbound {
		addrs = append(addrs, c.RemoteMultiaddr())
	}
	for _, a := range listen {
		if manet.IsIPUnspecified(a) {
			continue
		}
		if !slices.ContainsFunc(addrs, a.Equal) {
			addrs = append(addrs, a)
		}
	}
	// An address over maxAddrLen would make the record unreadable at the
	// next start (decodeRecord).
	addrs = slices.DeleteFunc(addrs, func(a ma.Multiaddr) bool { return len(a.Bytes()) > maxAddrLen })
	if c != nil {
		addrs = inScope(addrs, c.RemoteMultiaddr())
	}
	if len(addrs) == 0 {
		return
	}
	now := time.Now()
	rec, err := encodeRecord(now, addrs)
	if err != nil {
		s.log.Warn("encoding peer addresses failed", "remote", p.String(), "err", err)
		return
	}
	if len(addrs) > MaxAddrs || len(rec) > maxRecordWire {
		if addrs, rec, err = fitRecord(now, rankAddrs(addrs, c)); err != nil || len(addrs) == 0 {
			s.log.Warn("encoding peer addresses failed", "remote", p.String(), "err", err)
			return
		}
		s.m.cut.Inc()
	}
	joined := joinAddrs(addrs)
	if bytes.Equal(joined, st.stored) {
		return
	}
	if err := s.cfg.Store.Apply([]schema.Op{{Key: schema.PeerAddrs([]byte(p)), Val: rec}}, false); err != nil {
		s.log.Warn("storing peer addresses failed", "remote", p.String(), "err", err)
		return
	}
	st.stored = joined
	s.m.stored.Inc()
}

// inScope keeps the addresses a peer reached at remote may steer this
// node's dials to, as libp2p's identify does for its peerstore (the event
// it emits carries the peer's raw list): over a loopback connection all,
// over a private one all but loopback, over a public one (or one relayed
// by a public relay) public ones alone. A peer on the Internet would
// otherwise have the node dial, at every start, ports of this machine and
// of its LAN.
func inScope(addrs []ma.Multiaddr, remote ma.Multiaddr) []ma.Multiaddr {
	switch {
	case remote == nil || manet.IsIPLoopback(remote):
		return addrs
	case manet.IsPrivateAddr(remote):
		return slices.DeleteFunc(addrs, manet.IsIPLoopback)
	case manet.IsPublicAddr(remote):
		return slices.DeleteFunc(addrs, func(a ma.Multiaddr) bool { return !manet.IsPublicAddr(a) })
	}
	return addrs
}

// fitRecord keeps addrs, in their order, while they are at most MaxAddrs
// and their record at most maxRecordWire, and returns them with their
// record; an address that does not fit is left out and the next ones are
// tried.
func fitRecord(t time.Time, addrs []ma.Multiaddr) ([]ma.Multiaddr, []byte, error) {
	var kept []ma.Multiaddr
	var rec []byte
	for _, a := range addrs {
		if len(kept) == MaxAddrs {
			break
		}
		r, err := encodeRecord(t, append(slices.Clip(kept), a))
		if err != nil {
			return nil, nil, err
		}
		if len(r) > maxRecordWire {
			continue
		}
		kept, rec = append(kept, a), r
	}
	return kept, rec, nil
}

// rankAddrs orders a peer's addresses for keeping when there are more
// than MaxAddrs: relayed and public addresses first (a NAT'd contact's
// relayed address, announced last, is often its only way in from
// outside), then the one dialled (c's remote address, when c is
// outbound), then the others (private, loopback) in the order given. The
// sort is stable and works on a copy.
func rankAddrs(addrs []ma.Multiaddr, c network.Conn) []ma.Multiaddr {
	var dialled ma.Multiaddr
	if c != nil && c.Stat().Direction == network.DirOutbound {
		dialled = c.RemoteMultiaddr()
	}
	rank := func(a ma.Multiaddr) int {
		switch {
		case isRelayed(a), manet.IsPublicAddr(a):
			return 0
		case dialled != nil && a.Equal(dialled):
			return 1
		default:
			return 2
		}
	}
	out := slices.Clone(addrs)
	slices.SortStableFunc(out, func(x, y ma.Multiaddr) int { return rank(x) - rank(y) })
	return out
}

// isRelayed reports whether a goes through a relay (/p2p-circuit).
func isRelayed(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// dial connects to p at its known addresses, then through FindPeer.
func (s *Service) dial(ctx context.Context, p peer.ID) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	h := s.cfg.Host
	var first error
	if ai := h.Peerstore().PeerInfo(p); len(ai.Addrs) > 0 {
		if first = h.Connect(ctx, ai); first == nil {
			return nil
		}
	}
	if s.cfg.FindPeer == nil {
		if first == nil {
			first = errors.New("no known address")
		}
		return first
	}
	ai, err := s.cfg.FindPeer(ctx, p)
	if err != nil {
		return errors.Join(first, fmt.Errorf("find peer: %w", err))
	}
	return h.Connect(ctx, ai)
}

// connected reports whether p is connected, directly or through a relay
// (hole punching upgrades a relayed connection by itself).
func connected(h host.Host, p peer.ID) bool {
	c := h.Network().Connectedness(p)
	return c == network.Connected || c == network.Limited
}

// moved reports whether an address update means the node may be on another
// network: an address went away, or a direct one came.
func moved(e event.EvtLocalAddressesUpdated) bool {
	if len(e.Removed) > 0 {
		return true
	}
	for _, u := range e.Current {
		if u.Action == event.Added {
			if _, err := u.Address.ValueForProtocol(ma.P_CIRCUIT); err != nil {
				return true
			}
		}
	}
	return false
}

// joinAddrs is the addresses as one byte string, each length-prefixed.
func joinAddrs(addrs []ma.Multiaddr) []byte {
	b := []byte{}
	for _, a := range addrs {
		b = binary.AppendUvarint(b, uint64(len(a.Bytes())))
		b = append(b, a.Bytes()...)
	}
	return b
}
