package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	pbv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/dialerr"
)

// Reachability: the node learns whether it is reachable from outside with
// AutoNAT (v1 and v2, serving both to its peers); behind a NAT it reserves
// a slot on a relay (configured ones first, then connected contacts and
// room members that offer the service; never a stranger) and announces the
// relay address; a peer that comes in through the relay is upgraded to a
// direct connection by hole punching (DCUtR) where the NATs allow it. Port
// mapping (UPnP, NAT-PMP) is asked of the router when configured. A node
// configured to relay (relay_service) relays for its contacts and room
// members, whatever AutoNAT finds.

// hopProtocol is circuit relay v2's reservation protocol: peers that speak
// it offer relaying.
const hopProtocol = "/libp2p/circuit/relay/0.2.0/hop"

// Relay service limits: a relayed connection lasts at most relayDuration
// and carries at most relayData bytes each way (enough for contact
// requests, invites, nudges and small syncs; room traffic waits for the
// direct upgrade), a peer holds at most one reservation, at most
// relayReservations in all and relayPerIP from one address.
const (
	relayDuration     = 2 * time.Minute
	relayData         = 1 << 20
	relayReservations = 128
	relayPerIP        = 8
	relayCircuits     = 16
)

// reach is the node's view of its own reachability and of how each peer
// is connected.
type reach struct {
	// ready is set, and up closed, once the node has started: until then
	// the relay callbacks, which libp2p may call while the host is being
	// built, know only the configuration.
	ready atomic.Bool
	up    chan struct{}

	mu           sync.Mutex // protects the fields below
	reachability network.Reachability
	punch        map[peer.ID]punchResult // hole punching with each peer
	relays       map[peer.ID]*RelayState // the node's own reservations (relays.go)

	relayAsk      chan struct{} // autorelay failed a reservation (relayTracer): ask the configured relays not held
	relayContact  chan struct{} // a contact became active: ask them at once
	relayReserved chan struct{} // autorelay made or renewed one
	relayRecheck  chan struct{} // a connection to a relay the node dealt with opened: ask it again
	relaySweep    chan struct{} // a contact was revoked: drop the peers the relay service no longer serves
	// served are the peers the relay service (not open) gave, or renewed,
	// a reservation, still to check, each with the grant's number (from
	// servedGen): a sweep forgets a peer only if it was granted nothing
	// since the sweep looked.
	served    map[peer.ID]uint64
	servedGen uint64

	refused *prometheus.CounterVec // relay service: reservations and circuits refused
	punches *prometheus.CounterVec // hole punches, by result
	redials prometheus.Counter     // relayed peers dialled again so that they punch again
	relay   relayMetrics           // relay service: every request and what it carried
}

// relayMetrics count what the relay service does (relayv2.MetricsTracer),
// per node: every reservation and circuit request by its answer (a flood of
// reservations over the caps shows as reservation_refused, strangers as
// permission_denied), the reservations and circuits
// open now, and the bytes relayed.
type relayMetrics struct {
	requests     *prometheus.CounterVec
	reservations prometheus.Gauge
	circuits     prometheus.Gauge
	bytes        prometheus.Counter
}

func (m relayMetrics) RelayStatus(bool)               {}
func (m relayMetrics) ConnectionOpened()              { m.circuits.Inc() }
func (m relayMetrics) ConnectionClosed(time.Duration) { m.circuits.Dec() }
func (m relayMetrics) ConnectionRequestHandled(st pbv2.Status) {
	m.requests.WithLabelValues("connect", relayStatus(st)).Inc()
}
func (m relayMetrics) ReservationAllowed(renewal bool) {
	if !renewal {
		m.reservations.Inc()
	}
}
func (m relayMetrics) ReservationClosed(n int) { m.reservations.Sub(float64(n)) }
func (m relayMetrics) ReservationRequestHandled(st pbv2.Status) {
	m.requests.WithLabelValues("reserve", relayStatus(st)).Inc()
}
func (m relayMetrics) BytesTransferred(n int) { m.bytes.Add(float64(n)) }

// relayStatus is a relay answer as a label value (a small fixed set).
func relayStatus(st pbv2.Status) string {
	if _, ok := pbv2.Status_name[int32(st)]; !ok {
		return "other"
	}
	return strings.ToLower(st.String())
}

type punchResult struct {
	done bool // a punch ended: ok and err say how
	ok   bool
	err  string
	at   time.Time // when it ended
	// running is set while a punch runs (since busy).
	running bool
	busy    time.Time
}

func newReach(reg prometheus.Registerer) *reach {
	r := &reach{
		up:            make(chan struct{}),
		punch:         make(map[peer.ID]punchResult),
		relays:        make(map[peer.ID]*RelayState),
		relayAsk:      make(chan struct{}, 1),
		relayContact:  make(chan struct{}, 1),
		relayReserved: make(chan struct{}, 1),
		relayRecheck:  make(chan struct{}, 1),
		relaySweep:    make(chan struct{}, 1),
		served:        make(map[peer.ID]uint64),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_relay_refused_total",
			Help: "Relay service requests refused because the peer is neither a contact nor a room member, by kind (reserve, connect).",
		}, []string{"kind"}),
		punches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_holepunch_total",
			Help: "Hole punches to upgrade a relayed connection to a direct one, by result (ok, failed; refused: with a peer the node does not deal with).",
		}, []string{"result"}),
		redials: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_holepunch_redials_total",
			Help: "Relayed connections to contacts and room members dialled again through the relay so that the peer punches again (no punch ran, or the last one failed).",
		}),
	}
	r.relay = relayMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_relay_requests_total",
			Help: "Relay service requests, by kind (reserve, connect) and answer (ok; permission_denied: not a contact or member; reservation_refused: over the caps; resource_limit_exceeded, no_reservation, connection_failed, malformed_message, ...).",
		}, []string{"kind", "status"}),
		reservations: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_relay_reservations",
			Help: "Reservations the relay service holds now.",
		}),
		circuits: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_relay_circuits",
			Help: "Relayed connections open through the relay service now.",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_relay_bytes_total",
			Help: "Bytes the relay service carried.",
		}),
	}
	reg.MustRegister(r.refused, r.punches, r.redials, r.relay.requests, r.relay.reservations, r.relay.circuits, r.relay.bytes)
	return r
}

// Trace records hole punches as they start and end
// (holepunch.EventTracer).
func (r *reach) Trace(e *holepunch.Event) {
	at := time.Unix(0, e.Timestamp)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.punch) > 4096 {
		clear(r.punch)
	}
	pr := r.punch[e.Remote]
	switch ev := e.Evt.(type) {
	case *holepunch.StartHolePunchEvt:
		pr.running, pr.busy = true, at
	case *holepunch.EndHolePunchEvt:
		res := "ok"
		if !ev.Success {
			res = "failed"
		}
		r.punches.WithLabelValues(res).Inc()
		pr.done, pr.ok, pr.err, pr.at = true, ev.Success, ev.Error, at
		pr.running, pr.busy = false, at
	case *holepunch.ProtocolErrorEvt:
		pr.running, pr.busy = false, at
	default:
		return
	}
	r.punch[e.Remote] = pr
}

// started marks the node started (once).
func (r *reach) started() {
	r.ready.Store(true)
	close(r.up)
}

func (r *reach) setReachability(v network.Reachability) {
	r.mu.Lock()
	r.reachability = v
	r.mu.Unlock()
}

// Reachability is what AutoNAT found (or the configuration forced).
func (r *reach) Reachability() network.Reachability {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reachability
}

// lastPunch is the last punch with p that ended (ok false: none).
func (r *reach) lastPunch(p peer.ID) (punchResult, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.punch[p]
	return res, res.done
}

// punchBusy reports whether a punch with p runs, or something of one
// happened since.
func (r *reach) punchBusy(p peer.ID, since time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.punch[p]
	return (res.running && res.busy.After(since.Add(-punchMaxRun))) || res.busy.After(since)
}

// relayACL lets only the peers the node deals with use its relay.
type relayACL struct {
	n *Node
}

func (a relayACL) AllowReserve(p peer.ID, _ ma.Multiaddr) bool {
	if a.n.relayAllowed(p) {
		if !a.n.cfg.RelayOpen {
			// An open relay serves everyone: nobody to drop later, and
			// nothing to note (strangers' fresh keys would grow it).
			a.n.reach.noteServed(p)
		}
		return true
	}
	a.n.reach.refused.WithLabelValues("reserve").Inc()
	return false
}

func (a relayACL) AllowConnect(src peer.ID, _ ma.Multiaddr, dest peer.ID) bool {
	// The destination holds a reservation, so it passed AllowReserve; the
	// source must be someone the node or the destination deals with: a
	// stranger may still reach a reserved peer, to ask to be a contact
	// (the destination's own consent rules apply).
	if a.n.relayAllowed(src) || a.n.relayAllowed(dest) {
		return true
	}
	a.n.reach.refused.WithLabelValues("connect").Inc()
	return false
}

// The relay service checks a peer when it asks for a reservation or a
// relayed connection, and keeps a reservation it gave for its whole term
// (an hour); a peer the node stops dealing with (its contact revoked, the
// last room shared with it left) would go on being relayed to until then.
// So every relayTick, and at once after the user revokes a contact, the
// node closes its connections to each peer it gave a reservation that it
// may no longer serve: the relay drops a reservation, and the relayed
// connections to its holder, when the holder's connections close.

// kickRelaySweep has the node look at once for peers its relay service no
// longer serves.
func (n *Node) kickRelaySweep() {
	if n.reach == nil {
		return
	}
	select {
	case n.reach.relaySweep <- struct{}{}:
	default:
	}
}

// noteServed notes that the relay service gave p a reservation (or
// renewed it), and returns the grant's number.
func (r *reach) noteServed(p peer.ID) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.servedGen++
	r.served[p] = r.servedGen
	return r.servedGen
}

// servedPeers are the peers noted served, each with its grant's number.
func (r *reach) servedPeers() map[peer.ID]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.served)
}

// forgetServed forgets p if its last grant is still gen (a grant since,
// a renewal over a new connection, is checked on the next sweep), and
// reports whether it did.
func (r *reach) forgetServed(p peer.ID, gen uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.served[p] != gen {
		return false
	}
	delete(r.served, p)
	return true
}

// dropUnserved closes the connections of each peer the relay service gave
// a reservation that may no longer use it (see above).
func (n *Node) dropUnserved() {
	if n.relaySvc == nil || n.cfg.RelayOpen {
		return
	}
	r := n.reach
	net := n.host.Network()
	for p, gen := range r.servedPeers() {
		drop := false
		switch {
		case net.Connectedness(p) == network.NotConnected:
			// Its reservation went with its last connection.
		case n.relayAllowed(p):
			continue
		default:
			drop = true
		}
		r.forgetServed(p, gen)
		if drop {
			n.log.Info("relay service: closing the connections of a peer it no longer serves (not a contact, nor a member of a room of this node's)", "remote", p.String())
			if err := net.ClosePeer(p); err != nil {
				n.log.Debug("close a peer the relay no longer serves", "remote", p.String(), "err", err)
			}
		}
	}
}

// relayAllowed reports whether p may use this node's relay: anyone when
// the service is open, else contacts, peers asked, and room members the
// room policy vouches for (wantedPeers, knownPeer: sharesRoom), never a key
// only a node this user cut off brought in.
func (n *Node) relayAllowed(p peer.ID) bool {
	if n.cfg.RelayOpen {
		return true
	}
	if !n.reach.ready.Load() {
		return false
	}
	return slices.Contains(n.wantedPeers(), p) || n.knownPeer(p)
}

// punchFilter keeps hole punching to the peers the node deals with
// (wantedPeers, knownPeer: the rule punchRound follows) and to the public
// addresses they name. libp2p punches with every peer that comes in
// through a relay, a stranger too, and dials whatever addresses the peer
// answers with: a stranger named loopback ports of this machine, hosts of
// its LAN or any third party (hundreds fit in a message, each dialled up
// to three times). A peer's own hole punching sends only public addresses.
type punchFilter struct{ n *Node }

// maxPunchAddrs bounds the addresses of a peer dialled in one punch.
const maxPunchAddrs = 16

func (f punchFilter) punches(p peer.ID) bool {
	return slices.Contains(f.n.wantedPeers(), p) || f.n.knownPeer(p)
}

// FilterLocal: nothing to a stranger, so no punch starts.
func (f punchFilter) FilterLocal(p peer.ID, addrs []ma.Multiaddr) []ma.Multiaddr {
	if !f.n.reach.ready.Load() || !f.punches(p) {
		f.n.reach.punches.WithLabelValues("refused").Inc()
		return nil
	}
	return addrs
}

// FilterRemote: a stranger's addresses are not dialled, nor anyone's
// that are not public.
func (f punchFilter) FilterRemote(p peer.ID, addrs []ma.Multiaddr) []ma.Multiaddr {
	if !f.n.reach.ready.Load() || !f.punches(p) {
		return nil
	}
	out := slices.DeleteFunc(slices.Clone(addrs), func(a ma.Multiaddr) bool { return !manet.IsPublicAddr(a) })
	return out[:min(len(out), maxPunchAddrs)]
}

// reachOptions are the libp2p options for reachability.
func (n *Node) reachOptions() ([]libp2p.Option, error) {
	opts := []libp2p.Option{
		libp2p.EnableRelay(),
		libp2p.EnableAutoNATv2(),
		libp2p.EnableNATService(),
		libp2p.EnableHolePunching(holepunch.WithTracer(n.reach), holepunch.WithAddrFilter(punchFilter{n})),
		libp2p.EnableAutoRelayWithPeerSource(n.relayCandidates,
			autorelay.WithMinCandidates(1),
			autorelay.WithNumRelays(numRelays),
			autorelay.WithBootDelay(0),
			autorelay.WithBackoff(relayBackoff),
			autorelay.WithMinInterval(n.relayTick()),
			n.relayTracer(),
		),
	}
	switch n.cfg.Reachability {
	case "":
	case ReachabilityPublic:
		opts = append(opts, libp2p.ForceReachabilityPublic())
	case ReachabilityPrivate:
		opts = append(opts, libp2p.ForceReachabilityPrivate())
	default:
		return nil, fmt.Errorf("%w: reachability %q (want %q, %q or empty)", ErrBadConfig, n.cfg.Reachability, ReachabilityPublic, ReachabilityPrivate)
	}
	if n.cfg.NATPortMap {
		opts = append(opts, libp2p.NATPortMap())
	}
	return opts, nil
}

// startRelayService runs the relay service when the config asks for it,
// whatever AutoNAT finds. libp2p's own (libp2p.EnableRelayService) runs
// only while AutoNAT finds the node public, and AutoNAT needs peers that
// are public themselves to find that: a team's first relay, on a public
// address with only NATed laptops around, stayed "unknown" and never
// relayed while it was configured to. Behind a NAT the service still
// serves the peers that reach the node directly (on its network); `parley
// status` says so.
func (n *Node) startRelayService() error {
	if !n.cfg.RelayService {
		return nil
	}
	rc := relayv2.DefaultResources()
	rc.Limit = &relayv2.RelayLimit{Duration: relayDuration, Data: relayData}
	rc.MaxReservations = relayReservations
	rc.MaxReservationsPerIP = relayPerIP
	rc.MaxCircuits = relayCircuits
	svc, err := relayv2.New(n.host, relayv2.WithResources(rc), relayv2.WithACL(relayACL{n}),
		relayv2.WithMetricsTracer(n.reach.relay))
	if err != nil {
		return fmt.Errorf("node: start the relay service: %w (set relay_service = off in HOME/config to run without it)", err)
	}
	n.relaySvc = svc
	return nil
}

// relayServing reports whether the relay service answers reservations
// now: its protocol is on the host.
func (n *Node) relayServing() bool {
	return n.host != nil && slices.Contains(n.host.Mux().Protocols(), protocol.ID(hopProtocol))
}

// RelayServiceStatus says whether the node relays for others, for whom,
// and, when it is configured to but cannot serve everyone it is meant to,
// why (parley status).
func (n *Node) RelayServiceStatus() string {
	if !n.cfg.RelayService {
		return "off"
	}
	mode := "on (contacts and room members)"
	if n.cfg.RelayOpen {
		mode = "open (every peer)"
	}
	if !n.relayServing() {
		return mode + ": NOT SERVING: the relay service is not running (the node is stopping, or it failed: see the node's log)"
	}
	if n.reach.Reachability() == network.ReachabilityPrivate {
		return mode + ": serving, but AutoNAT finds this node behind a NAT: only peers that reach it directly (on its network) can use it; set reachability = public in HOME/config if it is in fact reachable"
	}
	return mode + ": serving"
}

// One call of relayCandidates waits, up to relayTick, for a peer that
// offers relaying to connect when none has yet: autorelay asks again only
// after its minimum interval (relayTick), so a source that answered at
// once with nothing (the node had just started, its contacts were still
// being dialled) left a node behind a NAT unreachable for that long.

// relayCandidates offers autorelay the configured relays, then connected
// contacts and room members that speak the relay protocol.
// Until it has offered one of those it waits, up to relayTick, for
// such a peer to connect (identify tells what a peer speaks).
func (n *Node) relayCandidates(ctx context.Context, num int) <-chan peer.AddrInfo {
	ch := make(chan peer.AddrInfo, num)
	go func() {
		defer close(ch)
		seen := make(map[peer.ID]bool)
		offer := func(ai peer.AddrInfo) bool {
			if ai.ID == n.id || seen[ai.ID] || len(seen) >= num {
				return false
			}
			seen[ai.ID] = true
			select {
			case ch <- ai:
				return true
			case <-ctx.Done():
				return false
			}
		}
		// A relay connection made before the node listens would leave
		// from another port than the one peers and NATs see later: QUIC
		// dials share the listening socket only once it exists.
		select {
		case <-n.listening:
		case <-ctx.Done():
			return
		}
		for _, ai := range n.relayList() {
			offer(ai)
		}
		// Which peers the node deals with is known once it has started.
		select {
		case <-n.reach.up:
		case <-ctx.Done():
			return
		}
		h := n.host
		sub, err := h.EventBus().Subscribe([]any{new(event.EvtPeerIdentificationCompleted), new(event.EvtPeerProtocolsUpdated)})
		if err != nil {
			n.log.Warn("relay candidates: subscribe to identify", "err", err)
			sub = nil
		}
		if sub != nil {
			defer sub.Close()
		}
		deadline := time.NewTimer(n.relayTick())
		defer deadline.Stop()
		for {
			offered := false
			for _, ai := range n.connectedRelays() {
				if offer(ai) {
					offered = true
				}
			}
			if offered || sub == nil || len(seen) >= num {
				return
			}
			select {
			case <-sub.Out():
			case <-deadline.C:
				return
			case <-ctx.Done():
				return
			case <-n.ctx.Done():
				return
			}
		}
	}()
	return ch
}

// connectedRelays are the connected peers that speak the relay protocol
// and that the node trusts to relay for it: its active contacts and the
// member nodes of its rooms. A stranger that offers relaying is never
// one: a relay carries, and can drop, delay or count, every connection
// made to the node through the address it hands out.
func (n *Node) connectedRelays() []peer.AddrInfo {
	h := n.host
	var out []peer.AddrInfo
	for _, p := range h.Network().Peers() {
		if ok, err := h.Peerstore().SupportsProtocols(p, hopProtocol); err != nil || len(ok) == 0 {
			continue
		}
		if n.relayTrusted(p) {
			out = append(out, h.Peerstore().PeerInfo(p))
		}
	}
	return out
}

// relayTrusted reports whether the node may reserve a slot on p's relay
// without p being a configured relay: p is an active contact or a member
// node of one of its rooms.
func (n *Node) relayTrusted(p peer.ID) bool {
	if n.contacts != nil {
		if c, ok := n.contacts.Book().Get(p, time.Now()); ok && c.State == consent.StateActive {
			return true
		}
	}
	return n.sharesRoom(p)
}

// watchReachability follows AutoNAT's verdict.
func (n *Node) watchReachability() error {
	sub, err := n.host.EventBus().Subscribe(new(event.EvtLocalReachabilityChanged))
	if err != nil {
		return fmt.Errorf("node: subscribe to reachability: %w", err)
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer sub.Close()
		for {
			select {
			case <-n.ctx.Done():
				return
			case e, ok := <-sub.Out():
				if !ok {
					return
				}
				r := e.(event.EvtLocalReachabilityChanged).Reachability
				n.reach.setReachability(r)
				n.log.Info("reachability", "reachability", r.String())
			}
		}
	}()
	return nil
}

// ConnInfo says how the node is connected to a peer.
type ConnInfo struct {
	Relayed bool           // only through a relay (a limited connection)
	Relay   peer.ID        // the relay, when relayed
	Why     string         // why relayed, or how the direct connection came
	Addrs   []ma.Multiaddr // the connections' remote addresses, each once, in the connections' order
}

// ConnInfo says how the node is connected to p (ok false: not connected).
func (n *Node) ConnInfo(p peer.ID) (ConnInfo, bool) {
	conns := n.host.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return ConnInfo{}, false
	}
	var ci ConnInfo
	ci.Relayed = true
	for _, c := range conns {
		a := c.RemoteMultiaddr()
		// Two connections may share an address: both nodes dialled at
		// once, and QUIC dials leave from the listening port, so the
		// inbound one comes from where the outbound one goes.
		if !slices.ContainsFunc(ci.Addrs, a.Equal) {
			ci.Addrs = append(ci.Addrs, a)
		}
		if !isRelayed(a) {
			ci.Relayed = false
		} else if ci.Relay == "" {
			if s, err := a.ValueForProtocol(ma.P_P2P); err == nil {
				if id, err := peer.Decode(s); err == nil {
					ci.Relay = id
				}
			}
		}
	}
	punch, punched := n.reach.lastPunch(p)
	switch {
	case !ci.Relayed && punched && punch.ok:
		ci.Why = "direct: upgraded from a relayed connection by hole punching"
	case !ci.Relayed:
		ci.Why = "direct"
	case n.reach.punchBusy(p, time.Now()):
		ci.Why = "relayed: hole punching under way"
	case punched && !punch.ok:
		ci.Why = "relayed: hole punching failed (" + dialerr.Reason(punch.err) + "); the NATs may not allow a direct connection"
	case !slices.Contains(n.host.Mux().Protocols(), holepunch.Protocol):
		// libp2p serves hole punching once the node knows a public
		// address of its own, one a peer observed it come from.
		ci.Why = "relayed: hole punching cannot start: this node knows no public address of its own yet " +
			"(the peers it reaches directly tell it the address they see; none has told it a public one)"
	case !n.peerPunches(p):
		ci.Why = "relayed: hole punching cannot start: the peer knows no public address of its own yet"
	case n.reach.Reachability() == network.ReachabilityPrivate:
		ci.Why = "relayed: this node is behind a NAT; hole punching not tried yet"
	default:
		ci.Why = "relayed: the peer is not reachable directly; hole punching not tried yet"
	}
	return ci, true
}

// peerPunches reports whether p may take part in hole punching: false
// once identify told that p does not serve it (p knows no public address
// of its own); true while p's protocols are not known.
func (n *Node) peerPunches(p peer.ID) bool {
	ps, err := n.host.Peerstore().GetProtocols(p)
	return err != nil || len(ps) == 0 || slices.Contains(ps, holepunch.Protocol)
}

func isRelayed(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// Hole punching again: libp2p's DCUtR runs on the receiving side of a
// relayed connection when it comes in, and only once that node knows a
// public address of its own. A relayed connection that came in earlier
// (both nodes had just started) or whose punch failed (a NAT that since
// changed, a busy moment) stays relayed for good. So the dialling side of
// a relayed connection to a peer the node deals with dials it again
// through the relay, which makes the peer punch again: punchFirst after
// the connection opened with no attempt, then punchRetry after each
// failure, doubling up to punchRetryMax.
const (
	punchTick     = 2 * time.Second
	punchFirst    = 4 * time.Second
	punchRetry    = 10 * time.Second
	punchRetryMax = 15 * time.Minute
	punchMaxRun   = time.Minute // a punch still running after this is taken as lost
)

// punchState is when to retry hole punching with a peer.
type punchState struct {
	next time.Time
	wait time.Duration
}

// retryPunches runs until the node stops; it alone owns its state.
func (n *Node) retryPunches() {
	t := time.NewTicker(punchTick)
	defer t.Stop()
	state := make(map[peer.ID]*punchState)
	for {
		select {
		case <-n.ctx.Done():
			return
		case now := <-t.C:
			n.punchRound(now, state)
		}
	}
}

// punchRound redials, through the relay, each peer the node deals with
// that it reaches through a relayed connection of its own making alone
// and whose time has come.
func (n *Node) punchRound(now time.Time, state map[peer.ID]*punchState) {
	net := n.host.Network()
	var wanted map[peer.ID]bool
	servesPunch := slices.Contains(n.host.Mux().Protocols(), holepunch.Protocol)
	seen := make(map[peer.ID]bool)
	for _, p := range net.Peers() {
		var out []network.Conn
		direct := false
		for _, c := range net.ConnsToPeer(p) {
			switch {
			case !isRelayed(c.RemoteMultiaddr()):
				direct = true
			case c.Stat().Direction == network.DirOutbound:
				out = append(out, c)
			}
		}
		if direct || len(out) == 0 {
			continue
		}
		if wanted == nil {
			wanted = make(map[peer.ID]bool)
			for _, w := range n.wantedPeers() {
				wanted[w] = true
			}
		}
		if !wanted[p] && !n.knownPeer(p) {
			continue
		}
		seen[p] = true
		punchable := servesPunch && n.peerPunches(p)
		st := state[p]
		if st == nil {
			opened := now
			for _, c := range out {
				if o := c.Stat().Opened; o.Before(opened) {
					opened = o
				}
			}
			st = &punchState{next: opened.Add(punchFirst), wait: punchRetry}
			state[p] = st
		}
		if n.reach.punchBusy(p, now.Add(-punchFirst)) {
			continue // a punch runs or just ran: wait for its outcome
		}
		if now.Before(st.next) {
			continue
		}
		if !punchable {
			// A redial now would only reopen the relayed connection:
			// wait, backoff unspent, for both ends to serve hole
			// punching (each does once it learns a public address of
			// its own), and redial at the next tick after that.
			continue
		}
		st.next, st.wait = now.Add(st.wait), min(2*st.wait, punchRetryMax)
		n.log.Debug("redialling a relayed peer for hole punching", "remote", p.String())
		n.reach.redials.Inc()
		for _, c := range out {
			if err := c.Close(); err != nil {
				n.log.Debug("close relayed connection", "remote", p.String(), "err", err)
			}
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
			defer cancel()
			if err := n.host.Connect(ctx, peer.AddrInfo{ID: p}); err != nil && n.ctx.Err() == nil {
				n.log.Debug("redial relayed peer", "remote", p.String(), "err", err)
			}
		}()
	}
	for p := range state {
		if !seen[p] {
			delete(state, p)
		}
	}
}
