package rooms_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// topicSpy records the topics peers announce to a GossipSub router.
type topicSpy struct {
	mu   sync.Mutex // protects seen
	seen map[string]bool
}

func (s *topicSpy) RecvRPC(rpc *pubsub.RPC) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range rpc.GetSubscriptions() {
		if sub.GetSubscribe() {
			s.seen[sub.GetTopicid()] = true
		}
	}
}

func (s *topicSpy) rooms() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for t := range s.seen {
		if strings.HasPrefix(t, rooms.TopicPrefix) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

func (*topicSpy) AddPeer(peer.ID, protocol.ID)                         {}
func (*topicSpy) RemovePeer(peer.ID)                                   {}
func (*topicSpy) Join(string)                                          {}
func (*topicSpy) Leave(string)                                         {}
func (*topicSpy) Graft(peer.ID, string)                                {}
func (*topicSpy) Prune(peer.ID, string)                                {}
func (*topicSpy) ValidateMessage(*pubsub.Message)                      {}
func (*topicSpy) DeliverMessage(*pubsub.Message)                       {}
func (*topicSpy) RejectMessage(*pubsub.Message, string)                {}
func (*topicSpy) DuplicateMessage(*pubsub.Message)                     {}
func (*topicSpy) ThrottlePeer(peer.ID)                                 {}
func (*topicSpy) SendRPC(*pubsub.RPC, peer.ID)                         {}
func (*topicSpy) DropRPC(*pubsub.RPC, peer.ID)                         {}
func (*topicSpy) UndeliverableMessage(*pubsub.Message)                 {}
func (*topicSpy) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (*topicSpy) OnClosedOutboundStream(peer.ID)                       {}
func (*topicSpy) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}

// TestTopicsDoNotNameRooms: a stranger that joins GossipSub next to a node
// sees the node's room topics, and learns no room ID from them. Members
// agree on each room's topic, and gossip flows on it.
func TestTopicsDoNotNameRooms(t *testing.T) {
	nt := startNet(t, 2)
	ctx := context.Background()
	shared := openRoom(t, nt, 1)
	ids := []identity.RoomID{shared}
	for _, name := range []string{"second", "third"} {
		id, err := mgr(nt, 0).Create(ctx, name, identity.HumanAgent)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var want []string
	for _, id := range ids {
		topic := mgr(nt, 0).TopicOf(id)
		if !strings.HasPrefix(topic, rooms.TopicPrefix) || strings.Contains(topic, string(id)) {
			t.Fatalf("room %s has topic %q", id, topic)
		}
		want = append(want, topic)
	}
	slices.Sort(want)
	if a, b := mgr(nt, 0).TopicOf(shared), mgr(nt, 1).TopicOf(shared); a != b {
		t.Fatalf("members disagree on the topic: %q and %q", a, b)
	}
	say(t, nt, 1, shared, "through gossip")
	nt.WaitFor(10*time.Second, func() bool { return eventCount(nt, 0, shared) == 4 }, "node 0 to get node 1's message")

	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	spy := &topicSpy{seen: map[string]bool{}}
	if _, err := pubsub.NewGossipSub(ctx, h, pubsub.WithRawTracer(spy)); err != nil {
		t.Fatal(err)
	}
	if err := h.Connect(ctx, peer.AddrInfo{ID: nt.ID(0), Addrs: nt.Node(0).Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return len(spy.rooms()) >= len(want) }, "the stranger to see node 0's room topics")
	if got := spy.rooms(); !slices.Equal(got, want) {
		t.Fatalf("the stranger saw %q, want %q", got, want)
	}
	for _, topic := range spy.rooms() {
		for _, id := range ids {
			if strings.Contains(topic, string(id)) {
				t.Fatalf("topic %q names room %s", topic, id)
			}
		}
	}
}

// TestIdleRoomsCostNoGoroutine: a room's goroutines start when it has work
// and stop when it is idle, so a node in many quiet rooms runs no more
// goroutines than in one; an idle room wakes up for what comes.
func TestIdleRoomsCostNoGoroutine(t *testing.T) {
	nt := startNet(t, 2)
	ctx := context.Background()
	shared := openRoom(t, nt, 1)
	base := runtime.NumGoroutine()
	var ids []identity.RoomID
	for i := range 50 {
		id, err := mgr(nt, 0).Create(ctx, fmt.Sprintf("quiet %d", i), identity.HumanAgent)
		if err != nil {
			t.Fatal(err)
		}
		say(t, nt, 0, id, "hello")
		ids = append(ids, id)
	}
	nt.WaitFor(30*time.Second, func() bool { return runtime.NumGoroutine() <= base+20 },
		"the goroutines of 50 idle rooms to stop (%d now, %d before)", runtime.NumGoroutine(), base)
	// Idle rooms still take gossip, sync and invites.
	say(t, nt, 1, shared, "wake up")
	nt.WaitFor(20*time.Second, func() bool { return eventCount(nt, 0, shared) == 4 }, "node 0 to get the message")
	if _, err := mgr(nt, 0).Invite(ctx, ids[7], nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return hasJoined(nt, 1, ids[7]) }, "node 1 to join an idle room")
	waitConverged(t, nt, ids[7], 4, 20*time.Second, 0, 1)
}

// TestStrangerReadsNoRoom: a stranger with a fresh key that connects to a
// member and subscribes to a room's topic (its name is in the member's
// GossipSub hello) reads none of the room's events, whether it speaks
// GossipSub or floodsub. A floodsub peer gets every message of the topics it
// subscribes to, past the peer filter, so a node speaks GossipSub only.
func TestStrangerReadsNoRoom(t *testing.T) {
	nt := startNet(t, 2)
	ctx := context.Background()
	shared := openRoom(t, nt, 1)
	topic := mgr(nt, 0).TopicOf(shared)

	hashID := func(m *pb.Message) string { s := sha256.Sum256(m.Data); return string(s[:]) }
	opts := []pubsub.Option{pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign), pubsub.WithNoAuthor(), pubsub.WithMessageIdFn(hashID)}
	type stranger struct {
		name string
		h    host.Host
		sub  *pubsub.Subscription
	}
	var strangers []stranger
	for _, kind := range []string{"gossipsub", "floodsub"} {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		newPS := pubsub.NewGossipSub
		if kind == "floodsub" {
			newPS = pubsub.NewFloodSub
		}
		ps, err := newPS(ctx, h, opts...)
		if err != nil {
			t.Fatal(err)
		}
		tp, err := ps.Join(topic)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := tp.Subscribe()
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := h.Connect(ctx, peer.AddrInfo{ID: nt.ID(i), Addrs: nt.Node(i).Host().Addrs()}); err != nil {
				t.Fatal(err)
			}
		}
		strangers = append(strangers, stranger{kind, h, sub})
	}
	// The GossipSub stranger is a subscriber of the topic for both members.
	for i := range 2 {
		nt.WaitFor(10*time.Second, func() bool {
			return slices.Contains(nt.Node(i).PubSub().ListPeers(topic), strangers[0].h.ID())
		}, "node %d to take the stranger's subscription", i)
	}
	// No member speaks floodsub.
	for i := range 2 {
		if s, err := strangers[1].h.NewStream(ctx, nt.ID(i), pubsub.FloodSubID); err == nil {
			s.Reset()
			t.Fatalf("node %d took a floodsub stream", i)
		}
	}

	before := eventCount(nt, 0, shared)
	for k := range 3 {
		say(t, nt, 0, shared, fmt.Sprintf("secret %d from node 0", k))
		say(t, nt, 1, shared, fmt.Sprintf("secret %d from node 1", k))
	}
	for i := range 2 {
		nt.WaitFor(10*time.Second, func() bool { return eventCount(nt, i, shared) == before+6 }, "node %d to have every post", i)
	}
	// What a member sends a peer goes out at once, or as gossip at the next
	// heartbeat (1 s): a stranger that got nothing in two has nothing coming.
	for _, s := range strangers {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := s.sub.Next(c)
		cancel()
		if err == nil {
			t.Fatalf("the %s stranger read %d bytes of the room (%q…)", s.name, len(m.Data), m.Data[:min(len(m.Data), 40)])
		}
	}
}

// TestStrangerGossipIsDroppedUnread: what a stranger (no contact, no shared
// room) publishes on a room's topic is dropped before it is decoded or its
// signature checked: GossipSub's peer filter keeps a stranger out of the
// mesh, not from sending on a topic it read in a member's hello.
func TestStrangerGossipIsDroppedUnread(t *testing.T) {
	nt := nodetest.Start(t, 1) // the contact service is the rooms' policy
	ctx := context.Background()
	id, err := mgr(nt, 0).Create(ctx, "alone", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	topic := mgr(nt, 0).TopicOf(id)
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	hashID := func(m *pb.Message) string { s := sha256.Sum256(m.Data); return string(s[:]) }
	ps, err := pubsub.NewGossipSub(ctx, h, pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign), pubsub.WithNoAuthor(), pubsub.WithMessageIdFn(hashID))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := ps.Join(topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Connect(ctx, peer.AddrInfo{ID: nt.ID(0), Addrs: nt.Node(0).Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool { return slices.Contains(tp.ListPeers(), nt.ID(0)) }, "the stranger to see the member on the topic")
	malformed := rejected(t, nt.Node(0), "malformed")
	for k := range 3 {
		if err := tp.Publish(ctx, []byte(fmt.Sprintf("not an event %d", k))); err != nil {
			t.Fatal(err)
		}
	}
	nt.WaitFor(10*time.Second, func() bool { return rejected(t, nt.Node(0), "no_consent") >= 3 }, "the member to drop the stranger's messages")
	if got := rejected(t, nt.Node(0), "malformed"); got != malformed {
		t.Fatalf("the member decoded %v of the stranger's messages", got-malformed)
	}
}
