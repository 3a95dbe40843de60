package node

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// The resource manager gives connections whose handshake is under way a
// shared budget (its transient scope), which a stranger fills with TCP
// connections that never finish their handshake. Connections from the IP
// addresses of the peers the node deals with (wantedPeers: contacts, peers
// it asked, room members) are let in past that, on the allowlist's own
// budget: allowKeeper keeps those addresses in the resource manager's
// allowlist.
//
// Each entry is bound to its peer's ID (/ip4/X/ipcidr/32/p2p/ID): before
// the handshake a connection matches on its source IP alone, and once the
// handshake names its peer, a connection of another peer is moved back to
// the shared budget (or refused if that is full), so a stranger behind a
// contact's NAT holds the allowlist's budget only while it handshakes, and
// libp2p's cap of connections per source address (8 an IPv4 address; an
// entry bound to a peer does not raise it) bounds that.
const (
	// allowPerPeer is how many addresses a peer has in the allowlist:
	// those of its live connections first, newest first, then those it
	// had, then its known (stored, announced) ones, public first.
	allowPerPeer = 4
	// allowTotal bounds the allowlist (libp2p scans it linearly); the
	// peers past it (wantedPeers lists contacts first) have none.
	allowTotal = 512
	// allowEvery is how often the allowlist is brought up to date when
	// nothing happened (a room's new member, stored addresses loaded).
	allowEvery = 5 * time.Second
	// allowGap is the least time between two updates: the bus's events
	// (a connection, an identify) come for every peer, strangers too.
	allowGap = 250 * time.Millisecond
)

// allowKeeper keeps the allowlist of the host's resource manager to the
// addresses of the wanted peers. run owns held.
type allowKeeper struct {
	al    *rcmgr.Allowlist
	h     host.Host
	peers func() []peer.ID
	kicks chan struct{}
	held  map[peer.ID][]netip.Addr // in the allowlist, most recent first
}

// newAllowKeeper returns a keeper of h's allowlist, or nil when h's
// resource manager has none (a host of the config's NewHost).
func newAllowKeeper(h host.Host, peers func() []peer.ID) *allowKeeper {
	al := rcmgr.GetAllowlist(h.Network().ResourceManager())
	if al == nil {
		return nil
	}
	return &allowKeeper{al: al, h: h, peers: peers, kicks: make(chan struct{}, 1), held: make(map[peer.ID][]netip.Addr)}
}

// kick asks for an update (the wanted peers changed). It never blocks.
func (k *allowKeeper) kick() {
	if k == nil {
		return
	}
	select {
	case k.kicks <- struct{}{}:
	default:
	}
}

// startAllowlist keeps the allowlist up to date until the node closes.
func (n *Node) startAllowlist() {
	if n.allow == nil {
		return
	}
	sub, err := n.host.EventBus().Subscribe([]any{
		new(event.EvtPeerIdentificationCompleted),
		new(event.EvtPeerConnectednessChanged),
	})
	if err != nil {
		n.log.Warn("allowlist: subscribe", "err", err)
		sub = nil
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.allow.run(n.ctx, sub)
	}()
}

func (k *allowKeeper) run(ctx context.Context, sub event.Subscription) {
	var events <-chan any
	if sub != nil {
		defer sub.Close()
		events = sub.Out()
	}
	tick := time.NewTicker(allowEvery)
	defer tick.Stop()
	k.update()
	last := time.Now()
	due := false
	var gap <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			due = true
		case <-k.kicks:
			due = true
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			due = true
		case <-gap:
			gap = nil
		}
		if !due || gap != nil {
			continue
		}
		if wait := allowGap - time.Since(last); wait > 0 {
			gap = time.After(wait)
			continue
		}
		k.update()
		last, due = time.Now(), false
	}
}

// update brings the allowlist to the wanted peers' addresses.
func (k *allowKeeper) update() {
	next := make(map[peer.ID][]netip.Addr)
	total := 0
	for _, p := range k.peers() {
		if total >= allowTotal {
			break
		}
		if _, ok := next[p]; ok || p == k.h.ID() {
			continue
		}
		ips := k.addrsOf(p)
		ips = ips[:min(len(ips), allowPerPeer, allowTotal-total)]
		next[p] = ips
		total += len(ips)
	}
	for p, old := range k.held {
		for _, ip := range old {
			if !slices.Contains(next[p], ip) {
				if e, err := allowEntry(p, ip); err == nil {
					_ = k.al.Remove(e)
				}
			}
		}
	}
	for p, ips := range next {
		var kept []netip.Addr
		for _, ip := range ips {
			if slices.Contains(k.held[p], ip) {
				kept = append(kept, ip)
			} else if e, err := allowEntry(p, ip); err == nil && k.al.Add(e) == nil {
				kept = append(kept, ip)
			}
		}
		if len(kept) == 0 {
			delete(next, p)
		} else {
			next[p] = kept
		}
	}
	k.held = next
}

// addrsOf is p's IP addresses, most recent first: those of its live
// (direct) connections, newest first, then those held already, then
// those of its known addresses (the peerstore's: stored where the node
// last reached it, announced in identify), public ones first.
func (k *allowKeeper) addrsOf(p peer.ID) []netip.Addr {
	var out []netip.Addr
	add := func(a ma.Multiaddr) {
		if a == nil || isCircuit(a) || manet.IsIPUnspecified(a) {
			return
		}
		ip, err := manet.ToIP(a)
		if err != nil {
			return
		}
		x, ok := netip.AddrFromSlice(ip)
		if !ok {
			return
		}
		if x = x.Unmap(); !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	conns := k.h.Network().ConnsToPeer(p)
	slices.SortStableFunc(conns, func(x, y network.Conn) int { return y.Stat().Opened.Compare(x.Stat().Opened) })
	for _, c := range conns {
		add(c.RemoteMultiaddr())
	}
	out = append(out, slices.DeleteFunc(slices.Clone(k.held[p]), func(x netip.Addr) bool { return slices.Contains(out, x) })...)
	known := k.h.Peerstore().Addrs(p)
	slices.SortStableFunc(known, func(x, y ma.Multiaddr) int { return addrRank(x) - addrRank(y) })
	for _, a := range known {
		add(a)
	}
	return out
}

// addrRank orders known addresses: public, then private, then loopback.
func addrRank(a ma.Multiaddr) int {
	switch {
	case manet.IsPublicAddr(a):
		return 0
	case manet.IsIPLoopback(a):
		return 2
	default:
		return 1
	}
}

func isCircuit(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// allowEntry is the allowlist's entry for p at ip: the one address, bound
// to p's ID.
func allowEntry(p peer.ID, ip netip.Addr) (ma.Multiaddr, error) {
	proto, bits := "ip4", 32
	if ip.Is6() {
		proto, bits = "ip6", 128
	}
	return ma.NewMultiaddr(fmt.Sprintf("/%s/%s/ipcidr/%d/p2p/%s", proto, ip.WithZone(""), bits, p))
}
