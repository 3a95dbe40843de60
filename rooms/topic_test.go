package rooms_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/identity"
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
