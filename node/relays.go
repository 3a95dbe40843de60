package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	circuitv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	pbv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"
	msmux "github.com/multiformats/go-multistream"
	"github.com/prometheus/client_golang/prometheus"
)

// The node's own reservations on relays, as the user sees them (parley
// status, parley id): autorelay holds them, but says neither which relay
// it holds until when nor why one refused, and it announces relayed
// addresses only through relays with public addresses (none on a LAN or
// loopback). So the node asks, itself, each relay autorelay reserved on
// (it protects their connections with its tag) for its reservation (asked
// again, a reservation is the same one renewed, and the answer tells its
// end); when autorelay's reservation fails, it asks each configured relay
// it does not hold, to learn why. A relay is held while the connection
// the reservation was made over lives (a relay drops a peer's reservation
// when the peer's last connection to it closes, and a restarted relay
// holds none), the relay has not refused since and the end it was told has
// not passed: when the node's last connection to a relay closes, or the
// relay stops offering relaying, the reservation is taken as lost; when a
// connection to a relay it dealt with opens, or autorelay fails a
// reservation, the node asks again, and the answer is what it holds. The
// relayed addresses to give out are built from the relay's addresses.

// relayBackoff is how long autorelay waits before it asks a relay that
// refused a reservation again.
const relayBackoff = 30 * time.Second

// numRelays is how many relays the node holds reservations on: autorelay
// keeps this many, and the node reserves on a trusted relay itself (after
// a contact became active) only while it holds fewer. Each reservation
// takes a slot of a relay's relayReservations (relayPerIP from one
// address: an office behind one NAT), and each adds relayed addresses to
// give out.
const numRelays = 2

// relayRenew is how long before its end the node renews a reservation it
// made itself on a relay autorelay did not pick (autorelay renews its own
// as long before).
const relayRenew = 2 * time.Minute

// defaultRelayTick is how often the node looks at its relays: expiries
// to learn again, configured relays to ask why they refused; autorelay
// asks for relay candidates at most as often (Config.RelayInterval).
const defaultRelayTick = 5 * time.Second

// relayTick is Config.RelayInterval, or defaultRelayTick.
func (n *Node) relayTick() time.Duration {
	if n.cfg.RelayInterval > 0 {
		return n.cfg.RelayInterval
	}
	return defaultRelayTick
}

// RelayState is one relay's reservation, as the node knows it.
type RelayState struct {
	Relay      peer.ID
	Configured bool // a relay of the config
	// Held: the relay holds a reservation for the node until Expires
	// (autorelay renews it 2 minutes before), and Addrs are the node's
	// addresses through it (RELAY_ADDR/p2p/RELAY/p2p-circuit/p2p/SELF), to
	// give out.
	Held    bool
	Expires time.Time
	Addrs   []ma.Multiaddr
	// Err is why the last reservation asked of the relay failed (empty:
	// it did not), at Failed; Retry is when autorelay asks again (zero:
	// as soon as the relay can be reached, every few seconds).
	Err    string
	Failed time.Time
	Retry  time.Time
	asked  time.Time // when the node last asked the relay itself
	// recheck: a connection to the relay opened, or autorelay failed a
	// reservation, since the node last asked: what it holds there is
	// known again only once it asks.
	recheck bool
	// gen counts the reservations lost on the relay (relayLost): an answer
	// to an ask that began before one is stale (made over a connection
	// since closed, with the reservation) and is not recorded.
	gen uint64
	// pending: asked, and no answer recorded since.
	pending bool
}

// relayTracer passes autorelay's events to libp2p's own tracer (which
// counts them in a registry of its own) and tells the node when a
// reservation failed.
type relayTracer struct {
	autorelay.MetricsTracer
	failed, reserved chan<- struct{}
}

func (t relayTracer) ReservationRequestFinished(refresh bool, err error) {
	t.MetricsTracer.ReservationRequestFinished(refresh, err)
	ch := t.reserved
	if err != nil {
		ch = t.failed
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (n *Node) relayTracer() autorelay.Option {
	return autorelay.WithMetricsTracer(relayTracer{
		MetricsTracer: autorelay.NewMetricsTracer(autorelay.WithRegisterer(prometheus.NewRegistry())),
		failed:        n.reach.relayAsk,
		reserved:      n.reach.relayReserved,
	})
}

// Relays are the relays the node holds a reservation on, the configured
// ones, and any that refused one, configured first, then by peer ID.
func (n *Node) Relays() []RelayState {
	r := n.reach
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	configured := n.relayList()
	out := make([]RelayState, 0, len(r.relays)+len(configured))
	for _, ai := range configured {
		st, ok := r.relays[ai.ID]
		if !ok {
			st = &RelayState{Relay: ai.ID}
		}
		c := *st
		c.Configured = true
		out = append(out, c)
	}
	var others []RelayState
	for p, st := range r.relays {
		if !n.configuredRelay(p) {
			others = append(others, *st)
		}
	}
	slices.SortFunc(others, func(a, b RelayState) int { return compareIDs(a.Relay, b.Relay) })
	out = append(out, others...)
	kept := out[:0]
	for _, st := range out {
		st.Addrs = nil
		st.Held = st.Expires.After(now) && n.host.Network().Connectedness(st.Relay) == network.Connected
		if st.Held {
			st.Addrs = n.relayedAddrs(st.Relay)
		} else {
			st.Expires = time.Time{}
		}
		if st.Configured || st.Held || st.Err != "" {
			kept = append(kept, st)
		}
	}
	return kept
}

func compareIDs(a, b peer.ID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RelayAddrs are the node's relayed addresses, to give out: reached
// through the relays it holds a reservation on.
func (n *Node) RelayAddrs() []ma.Multiaddr {
	var out []ma.Multiaddr
	for _, st := range n.Relays() {
		if st.Held {
			out = append(out, st.Addrs...)
		}
	}
	return out
}

// relayedAddrs are the node's addresses through relay p: p's addresses
// (the configured ones, and those the node's connections to it go to,
// but for TCP connections p dialled), each followed by
// /p2p/p/p2p-circuit/p2p/SELF.
func (n *Node) relayedAddrs(p peer.ID) []ma.Multiaddr {
	var base []ma.Multiaddr
	add := func(a ma.Multiaddr) {
		if a == nil || isRelayed(a) {
			return
		}
		a, _ = peer.SplitAddr(a)
		if a != nil && !slices.ContainsFunc(base, a.Equal) {
			base = append(base, a)
		}
	}
	for _, ai := range n.relayList() {
		if ai.ID == p {
			for _, a := range ai.Addrs {
				add(a)
			}
		}
	}
	for _, c := range n.host.Network().ConnsToPeer(p) {
		a := c.RemoteMultiaddr()
		if _, err := a.ValueForProtocol(ma.P_TCP); err == nil && c.Stat().Direction == network.DirInbound {
			// A TCP connection the relay dialled comes from a port of
			// its own for that connection, where nobody can dial it.
			continue
		}
		add(a)
	}
	tail, err := ma.NewMultiaddr("/p2p/" + p.String() + "/p2p-circuit/p2p/" + n.id.String())
	if err != nil {
		return nil
	}
	out := make([]ma.Multiaddr, 0, len(base))
	for _, a := range base {
		out = append(out, a.Encapsulate(tail))
	}
	return out
}

// autorelayTag is the tag autorelay protects its relays' connections with
// (go-libp2p's p2p/host/autorelay): a connected peer with it is a relay
// autorelay holds, or held, a reservation on.
const autorelayTag = "autorelay"

// watchRelays asks relays for the node's reservations (see above) when
// autorelay made or failed one, and every relayTick, until the node stops.
func (n *Node) watchRelays() {
	t := time.NewTicker(n.relayTick())
	defer t.Stop()
	var protos <-chan any
	if sub, err := n.host.EventBus().Subscribe(new(event.EvtPeerProtocolsUpdated)); err != nil {
		n.log.Warn("relays: subscribe to protocol updates", "err", err)
	} else {
		defer sub.Close()
		protos = sub.Out()
	}
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.reach.relayReserved:
			n.askRelays(time.Now(), askTick)
		case <-n.reach.relayAsk:
			n.askRelays(time.Now(), askFailed)
		case <-n.reach.relayContact:
			n.askRelays(time.Now(), askContact)
		case <-n.reach.relayRecheck:
			n.askRelays(time.Now(), askTick)
		case <-n.reach.relaySweep:
			n.dropUntrustedRelays()
			n.dropUnserved()
		case e, ok := <-protos:
			if !ok {
				protos = nil
				continue
			}
			ev := e.(event.EvtPeerProtocolsUpdated)
			if slices.Contains(ev.Removed, protocol.ID(hopProtocol)) {
				n.reach.relayLost(ev.Peer, "the relay stopped offering relaying")
			}
			if slices.Contains(ev.Added, protocol.ID(hopProtocol)) {
				n.reach.relayConnected(ev.Peer) // a relay that refused may take one now
			}
		case now := <-t.C:
			n.dropUntrustedRelays()
			n.askRelays(now, askTick)
			n.dropUnserved()
		}
	}
}

// watchRelayConns follows the node's connections to the relays it dealt
// with (see above).
func (n *Node) watchRelayConns() {
	n.host.Network().Notify(&network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) {
			if !isRelayed(c.RemoteMultiaddr()) {
				n.reach.relayConnected(c.RemotePeer())
			}
		},
		DisconnectedF: func(net network.Network, c network.Conn) {
			// As the relay does: it keeps the reservation while the peer
			// has a connection to it.
			if p := c.RemotePeer(); net.Connectedness(p) != network.Connected {
				n.reach.relayLost(p, errRelayClosed.Error())
			}
		},
	})
}

// relayConnected notes a new connection to p, or that p offers relaying
// now: if p is a relay the node dealt with, it is asked again.
func (r *reach) relayConnected(p peer.ID) {
	r.mu.Lock()
	st := r.relays[p]
	if st != nil {
		st.recheck = true
	}
	r.mu.Unlock()
	if st != nil {
		select {
		case r.relayRecheck <- struct{}{}:
		default:
		}
	}
}

// relayLost takes the reservation held on relay p, if any, as lost, why.
func (r *reach) relayLost(p peer.ID, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.relays[p]
	if st == nil {
		return
	}
	st.gen++
	if st.Expires.IsZero() {
		return
	}
	st.Expires = time.Time{}
	st.Err, st.Failed, st.Retry = why, time.Now(), time.Time{}
}

// relayState is p's state, made when new (r.mu held).
func (r *reach) relayState(p peer.ID) *RelayState {
	st := r.relays[p]
	if st == nil {
		if len(r.relays) >= maxRelayStates {
			r.forgetOldestRelay(time.Now())
		}
		st = &RelayState{Relay: p}
		r.relays[p] = st
	}
	return st
}

// maxRelayStates bounds the relays the node remembers.
const maxRelayStates = 64

// forgetOldestRelay drops the remembered relay that holds no reservation
// and was asked (or failed) longest ago; one that holds one is kept (r.mu
// held).
func (r *reach) forgetOldestRelay(now time.Time) {
	var oldest peer.ID
	var at time.Time
	for q, s := range r.relays {
		if s.Expires.After(now) {
			continue
		}
		t := s.asked
		if s.Failed.After(t) {
			t = s.Failed
		}
		if oldest == "" || t.Before(at) {
			oldest, at = q, t
		}
	}
	if oldest != "" {
		delete(r.relays, oldest)
	}
}

// Why the node asks its relays.
const (
	askTick    = iota // a tick, or autorelay made a reservation
	askFailed         // autorelay failed a reservation
	askContact        // a contact became active: a relay that refused may take one now
)

// askRelays asks relays for the node's reservation: each connected relay
// autorelay reserved on whose end the node does not know or that ends
// within a minute (the answer is the renewed reservation and its new end),
// each reservation the node made itself on a relay autorelay did not pick
// that ends within relayRenew (nobody else renews it), each relay to be
// checked again (a connection to it opened, autorelay failed a
// reservation: a restarted relay holds none), after a contact became
// active each connected contact or room member that offers relaying and is
// not held while the node holds or asks fewer than numRelays, and, after
// autorelay failed one or a contact became active, or once a failed one's
// retry time has passed, each configured relay not held (to learn why it
// refused, or to hold a reservation at once). A relay the node may no
// longer hold a reservation on (relayKept) is not asked: it is dropped
// (dropUntrustedRelays).
func (n *Node) askRelays(now time.Time, why int) {
	switch n.reach.Reachability() {
	case network.ReachabilityPublic:
		return
	case network.ReachabilityUnknown:
		// AutoNAT's verdict went with the node's peers (the relay was
		// gone, and with it the peers reached through it): a relay the
		// node dealt with that is connected again is asked at once, not
		// once AutoNAT finds the node behind a NAT again.
		n.askAgain(now)
		return
	}
	var asks []relayAsk
	net, cm := n.host.Network(), n.host.ConnManager()
	kept := n.keptRelays()
	var trusted []peer.AddrInfo
	if why == askContact {
		// A contact's relay that refused the node before may take it
		// now; autorelay would ask it only after its back-off.
		trusted = n.connectedRelays()
	}
	r := n.reach
	r.mu.Lock()
	if why == askFailed {
		// autorelay does not say which relay failed it: one the node
		// holds may have refused a renewal.
		for _, st := range r.relays {
			if !st.Expires.IsZero() && now.Sub(st.asked) >= n.relayTick() {
				st.recheck = true
			}
		}
	}
	ask := func(ai peer.AddrInfo) {
		st := r.relayState(ai.ID)
		st.asked, st.recheck, st.pending = now, false, true
		asks = append(asks, relayAsk{ai, st})
	}
	for _, p := range net.Peers() {
		if !cm.IsProtected(p, autorelayTag) || !kept[p] {
			continue // not autorelay's; or dropped (dropUntrustedRelays)
		}
		st := r.relays[p]
		if st != nil && !st.recheck && (now.Sub(st.asked) < n.relayTick() || st.Expires.After(now.Add(time.Minute))) {
			continue
		}
		ask(peer.AddrInfo{ID: p})
	}
	// The reservations the node made itself on relays autorelay did not
	// pick: nobody else renews them.
	for p, st := range r.relays {
		if cm.IsProtected(p, autorelayTag) || !kept[p] || !st.Expires.After(now) ||
			net.Connectedness(p) != network.Connected || now.Sub(st.asked) < n.relayTick() ||
			(!st.recheck && st.Expires.After(now.Add(relayRenew))) {
			continue
		}
		ask(peer.AddrInfo{ID: p})
	}
	asked := func(p peer.ID) bool { return slices.ContainsFunc(asks, func(a relayAsk) bool { return a.ai.ID == p }) }
	// Within numRelays: held, or asked and not answered yet.
	room := numRelays
	for p, st := range r.relays {
		if st.pending || (st.Expires.After(now) && net.Connectedness(p) == network.Connected) {
			room--
		}
	}
	for _, ai := range trusted {
		st := r.relays[ai.ID]
		if room <= 0 {
			break
		}
		if n.configuredRelay(ai.ID) || asked(ai.ID) || (st != nil && (st.Expires.After(now) || st.pending)) {
			continue // the configured relays follow; held, or being asked
		}
		ask(ai)
		room--
	}
	for _, ai := range n.relayList() {
		st := r.relays[ai.ID]
		switch {
		case st != nil && st.recheck:
		case st != nil && st.Expires.After(now) && net.Connectedness(ai.ID) == network.Connected:
			continue // held
		case why == askContact:
		case st != nil && now.Sub(st.asked) < n.relayTick():
			continue
		case why == askFailed:
		case st != nil && st.Err != "" && (st.Retry.IsZero() || now.After(st.Retry.Add(n.relayTick()))):
			// autorelay asked again, or asks as soon as it can reach the
			// relay: what is shown should not be older than that.
		default:
			continue
		}
		if !asked(ai.ID) {
			ask(ai)
		}
	}
	r.mu.Unlock()
	n.askEach(asks, why)
}

// askAgain asks each connected relay marked to be asked again.
func (n *Node) askAgain(now time.Time) {
	var asks []relayAsk
	net := n.host.Network()
	kept := n.keptRelays()
	r := n.reach
	r.mu.Lock()
	for p, st := range r.relays {
		if st.recheck && kept[p] && net.Connectedness(p) == network.Connected {
			st.asked, st.recheck, st.pending = now, false, true
			asks = append(asks, relayAsk{peer.AddrInfo{ID: p}, st})
		}
	}
	r.mu.Unlock()
	n.askEach(asks, askTick)
}

// relayAsk is a relay to ask, and its state when the node chose to.
type relayAsk struct {
	ai peer.AddrInfo
	st *RelayState
}

// askEach asks each relay of asks, each in a goroutine of its own.
func (n *Node) askEach(asks []relayAsk, why int) {
	for _, a := range asks {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			// The relay's node may record the contact a moment after
			// this one: a refusal then is asked again, three times.
			for try := 0; n.askRelay(a.ai, a.st) == pbv2.Status_PERMISSION_DENIED && why == askContact && try < 3; try++ {
				t := time.NewTimer(time.Second)
				select {
				case <-t.C:
				case <-n.ctx.Done():
					t.Stop()
					return
				}
			}
		}()
	}
}

// askRelay asks one relay for a reservation and records its answer in st,
// its state when the node chose to ask: its end, or why it failed. An
// answer is not recorded when the node dropped the relay since (st is no
// longer its state) or the reservation was lost since the ask began (the
// answer may tell of a reservation made over a connection now closed:
// the node asks again once connected). It returns the relay's answer
// (CONNECTION_FAILED when there was none).
func (n *Node) askRelay(ai peer.AddrInfo, st *RelayState) pbv2.Status {
	r := n.reach
	r.mu.Lock()
	current := r.relays[ai.ID] == st
	gen := st.gen
	r.mu.Unlock()
	if !current {
		return pbv2.Status_CONNECTION_FAILED
	}
	ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
	defer cancel()
	var rsvp *circuitv2.Reservation
	err := n.host.Connect(ctx, ai)
	if err == nil {
		rsvp, err = circuitv2.Reserve(ctx, n.host, ai)
	}
	if n.ctx.Err() != nil {
		return pbv2.Status_CONNECTION_FAILED
	}
	return n.recordAnswer(ai.ID, st, gen, rsvp, err)
}

// relayTerm is the term libp2p's relay v2 grants a reservation by
// default (relayv2.DefaultResources: an hour), the longest the node takes
// one to hold by its own clock.
var relayTerm = relayv2.DefaultResources().ReservationTTL

// reservationEnd is when the node takes a reservation the relay said ends
// at expires, answered at now, to end: the relay's word, but no later than
// relayTerm from now by the node's own clock. A relay whose clock runs
// ahead (or that lies) would have the node keep, give out and never renew
// a reservation the relay dropped long before.
func reservationEnd(now, expires time.Time) time.Time {
	if limit := now.Add(relayTerm); expires.After(limit) {
		return limit
	}
	return expires
}

// recordAnswer records relay p's answer to an ask made with p's state st
// at generation gen (see askRelay), and returns the relay's answer.
func (n *Node) recordAnswer(p peer.ID, st *RelayState, gen uint64, rsvp *circuitv2.Reservation, err error) pbv2.Status {
	status := pbv2.Status_OK
	if err != nil {
		status = pbv2.Status_CONNECTION_FAILED
		var re circuitv2.ReservationError
		if errors.As(err, &re) {
			status = re.Status
		}
	}
	now := time.Now()
	r := n.reach
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.relays[p] != st:
		// Dropped since (dropUntrustedRelays): a reservation just made
		// there goes with the connection.
		if err == nil && !n.relayKept(p) {
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				n.dropRelayConn(p)
			}()
		}
		return status
	}
	st.pending = false
	if st.gen != gen {
		st.recheck = true
		return status
	}
	if err == nil && n.host.Network().Connectedness(p) != network.Connected {
		// The connection closed since the relay answered, and the
		// reservation with it (checked under r.mu: a close from now on
		// finds the reservation recorded, and takes it as lost).
		err = errRelayClosed
		status = pbv2.Status_CONNECTION_FAILED
	}
	if err == nil {
		st.Expires, st.Err, st.Failed, st.Retry = reservationEnd(now, rsvp.Expiration), "", time.Time{}, time.Time{}
		n.trimRelays(now, p)
		return pbv2.Status_OK
	}
	was := st.Err
	st.Expires = time.Time{}
	st.Err, st.Failed, st.Retry = relayRefusal(err), now, time.Time{}
	if status != pbv2.Status_CONNECTION_FAILED {
		st.Retry = now.Add(relayBackoff)
	}
	if st.Err != was {
		n.log.Info("relay reservation failed", "relay", p.String(), "err", st.Err)
	}
	return status
}

// A relay the node holds a reservation on carries, and can drop, delay or
// count, every connection made to the node through the addresses it gives
// out: the node keeps one only on a configured relay or a peer it trusts
// (relayTrusted). One it stops trusting (the user revoked the contact, or
// left the last room shared with it) is dropped at once after a
// revocation, else on the next relayTick: the node forgets its state,
// autorelay's protection goes, and the connections to it close (a relay
// keeps a reservation only while the peer stays connected; autorelay
// forgets a relay it is no longer connected to, and relayCandidates never
// offers it again).

// relayKept reports whether the node may hold a reservation on p's relay.
func (n *Node) relayKept(p peer.ID) bool {
	return n.configuredRelay(p) || n.relayTrusted(p)
}

// keptRelays are the relays of the node's state, and the peers autorelay
// protects, that it may hold a reservation on (relayKept), as a set.
func (n *Node) keptRelays() map[peer.ID]bool {
	cm := n.host.ConnManager()
	r := n.reach
	r.mu.Lock()
	ps := slices.Collect(maps.Keys(r.relays))
	r.mu.Unlock()
	for _, p := range n.host.Network().Peers() {
		if cm.IsProtected(p, autorelayTag) && !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	kept := make(map[peer.ID]bool, len(ps))
	for _, p := range ps {
		kept[p] = n.relayKept(p)
	}
	return kept
}

// dropUntrustedRelays drops each relay the node deals with that it may no
// longer hold a reservation on (see above).
func (n *Node) dropUntrustedRelays() {
	if n.reach == nil || n.host == nil {
		return
	}
	for p, ok := range n.keptRelays() {
		if ok {
			continue
		}
		r := n.reach
		r.mu.Lock()
		st := r.relays[p]
		delete(r.relays, p)
		r.mu.Unlock()
		held := st != nil && !st.Expires.IsZero()
		if held || n.host.ConnManager().IsProtected(p, autorelayTag) {
			n.log.Info("relays: dropping the reservation on a relay no longer trusted (not a configured relay, a contact, nor a member of a room of this node's)", "relay", p.String())
			n.dropRelayConn(p)
		}
	}
}

// dropRelayConn ends the node's reservation on relay p: autorelay's
// protection goes, and the connections to p close.
func (n *Node) dropRelayConn(p peer.ID) {
	n.host.ConnManager().Unprotect(p, autorelayTag)
	if err := n.host.Network().ClosePeer(p); err != nil {
		n.log.Debug("close a relay no longer trusted", "relay", p.String(), "err", err)
	}
}

// trimRelays keeps the node within numRelays reservations once one was
// recorded on relay p: autorelay may pick, after the node reserved on a
// contact's relay itself, another than that one. Those the node made
// itself (not autorelay's, nor on a configured relay) go first, p last:
// the node forgets them, gives out no address through them and does not
// renew them (the relay holds each until its end, at most an hour, or
// until the connection closes; the connection to a contact is kept). r.mu
// held.
func (n *Node) trimRelays(now time.Time, p peer.ID) {
	r := n.reach
	net, cm := n.host.Network(), n.host.ConnManager()
	var held, spare []peer.ID
	for q, st := range r.relays {
		if !st.Expires.After(now) || net.Connectedness(q) != network.Connected {
			continue
		}
		held = append(held, q)
		if !cm.IsProtected(q, autorelayTag) && !n.configuredRelay(q) {
			spare = append(spare, q)
		}
	}
	// p last, the others by peer ID (the same on every trim).
	slices.SortFunc(spare, func(a, b peer.ID) int {
		switch {
		case a == p:
			return 1
		case b == p:
			return -1
		}
		return compareIDs(a, b)
	})
	for over := len(held) - numRelays; over > 0 && len(spare) > 0; over-- {
		q := spare[0]
		spare = spare[1:]
		delete(r.relays, q)
		n.log.Info("relays: letting a reservation made on a contact's relay lapse: the node holds as many as it keeps", "relay", q.String(), "keeps", numRelays)
	}
}

// errRelayClosed: the connection to the relay closed, and the reservation
// with it.
var errRelayClosed = errors.New("the connection to the relay closed (a relay keeps a reservation only while the node stays connected to it)")

// relayRefusal says why a reservation failed, as a person reads it.
func relayRefusal(err error) string {
	if errors.Is(err, errRelayClosed) {
		return err.Error()
	}
	var re circuitv2.ReservationError
	if !errors.As(err, &re) {
		return "could not reach the relay: " + err.Error()
	}
	switch re.Status {
	case pbv2.Status_PERMISSION_DENIED:
		return "refused (permission_denied): the relay serves only peers it deals with (a Parley relay: its contacts and room members, unless relay_service = open; ask its user to be a contact: it is asked again at once when that contact is made)"
	case pbv2.Status_RESERVATION_REFUSED:
		return "refused (reservation_refused): the relay holds as many reservations as it takes"
	case pbv2.Status_RESOURCE_LIMIT_EXCEEDED:
		return "refused (resource_limit_exceeded): the relay is busy"
	case pbv2.Status_CONNECTION_FAILED:
		if errors.Is(err, msmux.ErrNotSupported[protocol.ID]{}) {
			return "refused: the peer does not offer relaying now (its relay service is off; a Parley relay's `parley status` says why)"
		}
		if e := errors.Unwrap(re); e != nil {
			return "could not ask the relay: " + e.Error()
		}
		return "could not ask the relay: " + re.Reason
	}
	return fmt.Sprintf("refused (%s): %s", relayStatus(re.Status), re.Reason)
}
