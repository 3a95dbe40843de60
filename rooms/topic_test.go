package rooms_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
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
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-msgio"
	"google.golang.org/protobuf/proto"
	"io"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
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

// strangerOn starts a host with a fresh key on loopback that joins topic
// over GossipSub (or floodsub), taking messages as Parley sends them:
// unsigned, named by the hash of their bytes.
func strangerOn(t *testing.T, topic string, floodsub bool) (host.Host, *pubsub.Topic) {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	hashID := func(m *pb.Message) string { s := sha256.Sum256(m.Data); return string(s[:]) }
	newPS := pubsub.NewGossipSub
	if floodsub {
		newPS = pubsub.NewFloodSub
	}
	ps, err := newPS(context.Background(), h, pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign), pubsub.WithNoAuthor(), pubsub.WithMessageIdFn(hashID))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := ps.Join(topic)
	if err != nil {
		t.Fatal(err)
	}
	return h, tp
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

	type stranger struct {
		name string
		h    host.Host
		sub  *pubsub.Subscription
	}
	var strangers []stranger
	for _, kind := range []string{"gossipsub", "floodsub"} {
		h, tp := strangerOn(t, topic, kind == "floodsub")
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
	h, tp := strangerOn(t, topic, false)
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

// TestStrangerGrowsNoTopicTable: a stranger with a fresh key announces
// 20,000 made-up topics on one GossipSub stream. The node keeps
// node.MaxForeignTopics of them and its live heap hardly grows; a member
// invited afterwards still forms the room's mesh with it and gets its
// posts by gossip (anti-entropy is hourly).
func TestStrangerGrowsNoTopicTable(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Hour
	}))
	ctx := context.Background()
	id, err := mgr(nt, 0).Create(ctx, "test", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	topic := mgr(nt, 0).TopicOf(id)

	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// The stranger speaks GossipSub as far as taking the node's stream.
	h.SetStreamHandler(pubsub.GossipSubID_v11, func(s network.Stream) { _, _ = io.Copy(io.Discard, s) })
	if err := h.Connect(ctx, peer.AddrInfo{ID: nt.ID(0), Addrs: nt.Node(0).Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	var before runtime.MemStats
	liveHeap(&before)

	s, err := h.NewStream(ctx, nt.ID(0), pubsub.GossipSubID_v11)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := msgio.NewVarintWriter(s)
	write := func(topics ...string) {
		t.Helper()
		subs := make([]*pb.RPC_SubOpts, len(topics))
		for i := range topics {
			subs[i] = &pb.RPC_SubOpts{Subscribe: proto.Bool(true), Topicid: &topics[i]}
		}
		b, err := proto.Marshal(&pb.RPC{Subscriptions: subs})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteMsg(b); err != nil {
			t.Fatal(err)
		}
	}
	const perRPC, rpcs = 5_000, 4
	pad := strings.Repeat("x", 64)
	junk := func(r, k int) string { return fmt.Sprintf("/junk/%s/%d/%d", pad, r, k) }
	for r := range rpcs {
		topics := make([]string, perRPC)
		for k := range topics {
			topics[k] = junk(r, k)
		}
		write(topics...)
	}
	// GossipSub takes a stream's RPCs in order: once the node lists the
	// stranger on the room's topic, it has taken every made-up one.
	write(topic)
	nt.WaitFor(30*time.Second, func() bool {
		return slices.Contains(nt.Node(0).PubSub().ListPeers(topic), h.ID())
	}, "the node to take the stranger's subscription to the room's topic")
	var after runtime.MemStats
	liveHeap(&after)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d made-up topics: live heap %.1f -> %.1f MiB", rpcs*perRPC, float64(before.HeapAlloc)/(1<<20), float64(after.HeapAlloc)/(1<<20))

	kept := 0
	for r := range rpcs {
		for k := range perRPC {
			if slices.Contains(nt.Node(0).PubSub().ListPeers(junk(r, k)), h.ID()) {
				kept++
			}
		}
	}
	if kept != node.MaxForeignTopics {
		t.Fatalf("the node keeps %d of the stranger's %d made-up topics, want %d", kept, rpcs*perRPC, node.MaxForeignTopics)
	}
	if d := dropped(t, nt.Node(0), "over_cap"); d != float64(rpcs*perRPC-node.MaxForeignTopics) {
		t.Fatalf("dropped (over_cap) %v, want %d", d, rpcs*perRPC-node.MaxForeignTopics)
	}
	if growth > 1<<20 {
		t.Fatalf("live heap grew by %.1f MiB", float64(growth)/(1<<20))
	}

	// A member still forms the room's mesh and gets posts by gossip.
	nt.WaitFor(10*time.Second, func() bool {
		return nt.Node(0).Host().Network().Connectedness(nt.ID(1)) == network.Connected
	}, "node 1 connected to node 0")
	if _, err := mgr(nt, 0).Invite(ctx, id, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(40*time.Second, func() bool { return hasJoined(nt, 1, id) }, "node 1 to join")
	nt.WaitFor(time.Minute, func() bool {
		return mgr(nt, 0).MeshHas(id, nt.ID(1)) && mgr(nt, 1).MeshHas(id, nt.ID(0))
	}, "the mesh")
	say(t, nt, 0, id, "from node 0")
	say(t, nt, 1, id, "from node 1")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 1, id, "from node 0") }, "node 1 to get node 0's post")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 0, id, "from node 1") }, "node 0 to get node 1's post")
}

// dropped is how many peers' subscriptions node n did not give GossipSub,
// for reason.
func dropped(t *testing.T, n *node.Node, reason string) float64 {
	t.Helper()
	return labelled(t, n, "parley_gossip_subscriptions_dropped_total", reason)
}

// liveHeap reads the memory statistics once garbage is collected, pools
// included (a pool's objects outlive one collection).
func liveHeap(ms *runtime.MemStats) {
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(ms)
}

// TestStrangerStreamsAreNotRead: a stranger that opens a sync or an invite
// stream and claims a frame of 1 MiB without sending it is answered at
// once, unread: a node reads no frame of a peer its policy refuses, so
// strangers with fresh keys cannot hold a megabyte a stream for a minute.
func TestStrangerStreamsAreNotRead(t *testing.T) {
	nt := nodetest.Start(t, 1) // the node's own policy: contacts and co-members
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ctx := context.Background()
	if err := h.Connect(ctx, peer.AddrInfo{ID: nt.ID(0), Addrs: nt.Node(0).Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	claim := binary.AppendUvarint(nil, 1<<20-1)
	for _, proto := range []protocol.ID{rooms.ProtocolSync, rooms.ProtocolInvite} {
		st, err := h.NewStream(ctx, nt.ID(0), proto)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Write(claim); err != nil {
			t.Fatal(err)
		}
		// Before, the node waited for the frame's body: 60 s for sync,
		// 20 s for an invite.
		_ = st.SetReadDeadline(time.Now().Add(10 * time.Second))
		var b [64]byte
		n, err := st.Read(b[:])
		var nerr interface{ Timeout() bool }
		if errors.As(err, &nerr) && nerr.Timeout() {
			t.Fatalf("%s: the node waited for the stranger's frame", proto)
		}
		t.Logf("%s: answered with %d bytes, %v", proto, n, err)
		st.Reset()
	}
}
