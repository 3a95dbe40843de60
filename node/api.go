package node

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/contacts"
	"github.com/parley-mesh/parley/internal/localapi"
)

// apiBackend serves the local API from the node.
type apiBackend struct{ n *Node }

var _ localapi.Backend = apiBackend{}

func (b apiBackend) Info() localapi.Info {
	in := localapi.Info{PeerID: b.n.id.String(), Handle: b.n.cfg.Handle, Addrs: addrStrings(b.n.Addrs()),
		RelayAddrs: addrStrings(b.n.RelayAddrs())}
	if b.n.org != nil {
		if r := b.n.org.Mine(); r != nil {
			in.Org = &localapi.Membership{OrgID: r.Org.String(), Name: r.Name, Until: r.NotAfter}
		}
	}
	return in
}

func (b apiBackend) Status() localapi.Status {
	n := b.n
	direct, relayed := 0, []localapi.Peer{}
	for _, p := range b.Peers() {
		if p.Conn == "relayed" {
			relayed = append(relayed, p)
		} else {
			direct++
		}
	}
	problem := ""
	if err := n.db.Problem(); err != nil {
		problem = err.Error()
	}
	st := localapi.Status{
		StoreProblem: problem,
		Reachability: strings.ToLower(n.reach.Reachability().String()),
		RelayService: n.RelayServiceStatus(),
		Relays:       relayInfos(n),
		Direct:       direct,
		Relayed:      relayed,
		Info:         b.Info(),
		Home:         n.cfg.Home,
		Version:      Version,
		Started:      n.started,
		UptimeSec:    time.Since(n.started).Seconds(),
		Peers:        len(n.host.Network().Peers()),
		DHTPeers:     n.dht.RoutingTable().Size(),
		PubSubPeer:   len(n.ps.ListPeers("")),
		MDNS:         n.cfg.MDNS,
		Unreached:    unreachedTotal(n),
	}
	st.HumanAsks, st.HumanInvitations = humanWaiting(n)
	st.HumanOwed = st.HumanAsks + st.HumanInvitations
	st.ContactRequests = contactRequests(n)
	return st
}

// relayInfos are the node's reservations on relays, for the local API.
func relayInfos(n *Node) []localapi.RelayInfo {
	public := n.reach.Reachability() == network.ReachabilityPublic
	out := []localapi.RelayInfo{}
	for _, st := range n.Relays() {
		ri := localapi.RelayInfo{PeerID: st.Relay.String(), Configured: st.Configured, Addrs: addrStrings(st.Addrs),
			Expires: st.Expires, Error: st.Err, FailedAt: st.Failed, RetryAt: st.Retry}
		switch {
		case st.Held:
			ri.State = "held"
		case st.Err != "":
			ri.State = "failed"
		case public:
			ri.State = "not needed"
		default:
			ri.State = "waiting"
		}
		out = append(out, ri)
	}
	return out
}

// humanWaiting counts the asks the node's human owes and the invitations
// waiting for it, as parley inbox lists them.
func humanWaiting(n *Node) (asks, invitations int) {
	if n.inbox == nil {
		return 0, 0
	}
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
	defer cancel()
	// Counted, not listed: a peek lists them within the take's budget.
	asks, invitations, err := n.inbox.Waiting(ctx, string(identity.HumanAgent))
	if err != nil {
		return 0, 0
	}
	return asks, invitations
}

func (b apiBackend) Peers() []localapi.Peer {
	h := b.n.host
	ids := h.Network().Peers()
	slices.Sort(ids)
	out := make([]localapi.Peer, 0, len(ids))
	for _, id := range ids {
		ci, ok := b.n.ConnInfo(id)
		if !ok {
			continue
		}
		pe := connPeer(id, ci)
		pe.Why = ci.Why
		if b.n.names != nil {
			if h, ok := b.n.names.Handle(id); ok {
				pe.Handle, pe.Name = h, b.n.names.Name(id)
			}
			if m := b.n.names.Member(id); m != nil {
				pe.Org = &localapi.Membership{OrgID: m.Org.String(), Name: m.Name, Until: m.Until}
			}
		}
		out = append(out, pe)
	}
	return out
}

// connectTarget reads what `parley connect` dials: a multiaddr ending in
// /p2p/PEER_ID, or several of one node's separated by commas (the ready
// line's addrs=, as --bootstrap takes it).
func connectTarget(addr string) (*peer.AddrInfo, error) {
	addr = strings.TrimSpace(addr)
	if strings.Trim(addr, ", \t") == "" {
		return nil, localapi.Errorf(http.StatusBadRequest, "bad_addr",
			"%q holds no address (example: /ip4/127.0.0.1/tcp/4190/p2p/12D3KooW...)", addr)
	}
	if !strings.HasPrefix(addr, "/") {
		if _, err := peer.Decode(addr); err == nil {
			return nil, localapi.Errorf(http.StatusBadRequest, "bad_addr",
				"%s is a peer ID, not an address: give one of the addresses its node's `parley id` prints (/ip4/…/tcp/…/p2p/%s)", addr, addr)
		}
		return nil, localapi.Errorf(http.StatusBadRequest, "bad_addr",
			"%q is not a multiaddr (example: /ip4/127.0.0.1/tcp/4190/p2p/12D3KooW...)", addr)
	}
	ai, err := contacts.ParseTarget(addr)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "contacts: ")
		return nil, localapi.Errorf(http.StatusBadRequest, "bad_addr", "%s", strings.TrimPrefix(msg, contacts.ErrBadInput.Error()+": "))
	}
	return &ai, nil
}

func (b apiBackend) Connect(ctx context.Context, addr string) (localapi.Peer, error) {
	ai, err := connectTarget(addr)
	if err != nil {
		return localapi.Peer{}, err
	}
	if ci, ok := b.n.ConnInfo(ai.ID); ok {
		// libp2p keeps the connection it has and dials nothing: say so,
		// rather than let a wrong address pass for a good one.
		pe := connPeer(ai.ID, ci)
		pe.Why = fmt.Sprintf("already connected (%s), through %s; %s was not dialled", pe.Conn, ci.Addrs[0], addr)
		return pe, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := b.n.Connect(ctx, *ai); err != nil {
		// What to do next: the likely causes of a dial no node answers.
		return localapi.Peer{}, localapi.Errorf(http.StatusBadGateway, "dial_failed",
			"connect %s: %v: no node answered there; it may be down (its user starts it with `parley up`), or the address may be old or cut short: ask its user for the addresses `parley id` prints now",
			addr, err)
	}
	if ci, ok := b.n.ConnInfo(ai.ID); ok {
		return connPeer(ai.ID, ci), nil
	}
	return localapi.Peer{PeerID: ai.ID.String(), Addrs: addrStrings(ai.Addrs)}, nil
}

// connPeer is a connected peer as the local API shows it: its
// connections' addresses, and whether it is reached directly or only
// through a relay (which).
func connPeer(p peer.ID, ci ConnInfo) localapi.Peer {
	pe := localapi.Peer{PeerID: p.String(), Addrs: addrStrings(ci.Addrs), Conn: "direct"}
	if ci.Relayed {
		pe.Conn = "relayed"
		if ci.Relay != "" {
			pe.Relay = ci.Relay.String()
		}
	}
	return pe
}

func (b apiBackend) Shutdown() { b.n.requestStop() }

func (b apiBackend) Metrics() http.Handler {
	return promhttp.HandlerFor(b.n.reg, promhttp.HandlerOpts{})
}

func addrStrings(addrs []ma.Multiaddr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}

func (n *Node) String() string { return fmt.Sprintf("node %s (%s)", n.id, n.cfg.Home) }

func unreachedTotal(n *Node) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	un := n.unreached(ctx)
	if len(un) == 0 {
		return 0
	}
	// Only the agents `parley who` lists, which it marks: an agent whose
	// registration ended is not there to mark.
	total := 0
	for _, w := range n.agents.Who(ctx) {
		if w.Local {
			total += un[w.Agent]
		}
	}
	return total
}
