package node

import (
	"log/slog"
	"sync"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
)

// MaxForeignTopics is the most topics this node is not in that GossipSub
// keeps for one peer. GossipSub keeps an entry for every topic a peer
// announces, for as long as the peer stays connected, so a stranger
// announcing made-up topics would grow the node without end. They cannot
// all be refused: a member may subscribe to a room's topic before this
// node opens the room (while an invite is on its way), and GossipSub
// builds the room's mesh from those subscriptions. A peer that announces
// more is in hundreds of rooms without this node: the topics past the cap
// are dropped, and should this node join one of those rooms later, it
// meshes with that peer there only if the peer grafts it (other members
// still form the mesh). A kept topic costs about 400 bytes, GossipSub's
// entry and the filter's together: about 0.1 MiB a peer at the cap.
const MaxForeignTopics = 256

// maxTopicLen is the longest topic this node is not in that GossipSub
// keeps for a peer. A room's topic is 39 bytes (rooms.TopicFor).
const maxTopicLen = 128

// subFilter is the node's GossipSub subscription filter. A peer's
// subscriptions to topics this node is in always pass, and so do its
// unsubscriptions; its subscriptions to other topics pass up to
// MaxForeignTopics distinct topics (a topic announced again counts once,
// one unsubscribed frees its place), each at most maxTopicLen bytes. A
// peer's count is dropped once no connection to it is left, so the
// filter's own memory is bounded by the peers connected.
//
// It never fails an RPC: GossipSub ignores the whole RPC, its messages and
// control included, when the filter returns an error.
type subFilter struct {
	own       func(topic string) bool // whether this node is in topic
	connected func(peer.ID) bool      // whether a connection to the peer is open
	log       *slog.Logger

	dropped                        *prometheus.CounterVec
	overCap, tooLong, disconnected prometheus.Counter

	mu    sync.Mutex // protects peers
	peers map[peer.ID]map[string]struct{}
}

var _ pubsub.SubscriptionFilter = (*subFilter)(nil)

func newSubFilter(own func(string) bool, connected func(peer.ID) bool, log *slog.Logger) *subFilter {
	f := &subFilter{own: own, connected: connected, log: log, peers: make(map[peer.ID]map[string]struct{})}
	f.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_gossip_subscriptions_dropped_total",
		Help: "Peers' subscriptions to topics this node is not in that GossipSub was not given, by reason (over_cap: the peer already has " +
			"the most such topics kept; too_long: the topic's name is too long; disconnected: no connection to the peer is left).",
	}, []string{"reason"})
	f.overCap = f.dropped.WithLabelValues("over_cap")
	f.tooLong = f.dropped.WithLabelValues("too_long")
	f.disconnected = f.dropped.WithLabelValues("disconnected")
	return f
}

// CanSubscribe lets this node join any topic: Parley chooses what it joins.
func (f *subFilter) CanSubscribe(string) bool { return true }

// FilterIncomingSubscriptions returns the subscriptions of from's RPC that
// GossipSub keeps. It runs on GossipSub's event loop.
func (f *subFilter) FilterIncomingSubscriptions(from peer.ID, subs []*pb.RPC_SubOpts) ([]*pb.RPC_SubOpts, error) {
	var out []*pb.RPC_SubOpts // nil while every subscription so far passes
	var overCap, tooLong, gone int
	f.mu.Lock()
	set := f.peers[from]
	for i, sub := range subs {
		topic := sub.GetTopicid()
		pass := true
		switch {
		case !sub.GetSubscribe():
			if set != nil {
				delete(set, topic)
			}
		case f.own(topic):
		case len(topic) > maxTopicLen:
			pass = false
			tooLong++
		default:
			if _, ok := set[topic]; ok {
				break
			}
			if set == nil {
				// A peer's RPC can reach the event loop after its last
				// connection closed, when forget has already run: a
				// count started then would never be dropped.
				if !f.connected(from) {
					pass = false
					gone++
					break
				}
				set = make(map[string]struct{})
				f.peers[from] = set
			}
			if len(set) >= MaxForeignTopics {
				pass = false
				overCap++
				break
			}
			set[topic] = struct{}{}
		}
		switch {
		case !pass && out == nil:
			out = make([]*pb.RPC_SubOpts, i, len(subs))
			copy(out, subs[:i])
		case pass && out != nil:
			out = append(out, sub)
		}
	}
	if set != nil && len(set) == 0 {
		delete(f.peers, from)
	}
	f.mu.Unlock()
	if out == nil {
		return subs, nil
	}
	f.overCap.Add(float64(overCap))
	f.tooLong.Add(float64(tooLong))
	f.disconnected.Add(float64(gone))
	f.log.Debug("gossip subscriptions dropped", "peer", from, "kept", len(out),
		"over_cap", overCap, "too_long", tooLong, "disconnected", gone)
	return out, nil
}

// forget drops p's count once no connection to p is left. GossipSub
// forgets p's subscriptions when its stream to p closes.
func (f *subFilter) forget(p peer.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Under mu: a subscription that starts a count checks the connection
	// under mu too, so no count starts after the last forget.
	if !f.connected(p) {
		delete(f.peers, p)
	}
}

// counted is how many topics this node is not in are counted for p.
func (f *subFilter) counted(p peer.ID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.peers[p])
}

// notifiee calls forget when a connection closes.
func (f *subFilter) notifiee() network.Notifiee {
	return &network.NotifyBundle{DisconnectedF: func(_ network.Network, c network.Conn) { f.forget(c.RemotePeer()) }}
}
