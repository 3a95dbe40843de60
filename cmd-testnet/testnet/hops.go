package testnet

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/rooms"
)

// Hops is where a delivery's time goes inside GossipSub, measured the same
// way for Parley and for raw GossipSub, so that their hops can be set side
// by side. A receiver gets its first copy of a message either from the
// publisher (direct) or from another receiver that relays it. Times are in
// milliseconds; they come from a GossipSub raw tracer on every node
// (in-process runs only).
type Hops struct {
	// Deliveries is the number of first copies the figures cover, and
	// Relayed how many of them came through another receiver.
	Deliveries int `json:"deliveries"`
	Relayed    int `json:"relayed"`
	// Queued runs from the publisher's Publish call returning (Parley: the
	// published stage) to its GossipSub event loop queueing the message
	// for its first peer.
	Queued *Latency `json:"queued,omitempty"`
	// Wire runs from that queueing to a direct receiver's event loop
	// taking the message in: the sending goroutines, the stream, the
	// receiving goroutines. RelayWire is the same for a relayed copy, from
	// the relay's delivery of the message to the receiver's taking it in.
	Wire      *Latency `json:"wire,omitempty"`
	RelayWire *Latency `json:"relay_wire,omitempty"`
	// Receive runs from the receiver's event loop taking the message in
	// to its delivery to the topic's subscription: the validation queue,
	// the signature check and the validators, the event loop again.
	Receive *Latency `json:"receive,omitempty"`
	// Visible (Parley only) runs from that delivery to the event being
	// handed to the room's subscribers: the room's reader, the store's
	// write.
	Visible *Latency `json:"visible,omitempty"`
}

// hopLog follows one publisher's messages through GossipSub on every node
// of a run, by a hash of their bytes, while it is on.
type hopLog struct {
	on   atomic.Bool
	seed maphash.Seed

	mu    sync.Mutex // protects the fields below
	pub   peer.ID
	peers []peer.ID // by node index (Parley)
	msgs  map[uint64]*hopMsg
	// visible[event][node] is when node handed the event to its room's
	// subscribers, and authored[event] when its author's Publish returned
	// (Parley: the room trace names events, not their bytes, so breakdown
	// finds them by their message ID).
	visible  map[rooms.ID]map[int]time.Time
	authored map[rooms.ID]time.Time
}

type hopMsg struct {
	published time.Time // Publish returned
	queued    time.Time // the publisher queued it for its first peer
	id        string    // GossipSub's message ID (Parley's: the event ID)
	rx        map[peer.ID]*hopRx
}

type hopRx struct {
	from      peer.ID // who sent the first copy
	recv      time.Time
	delivered time.Time
}

func newHopLog() *hopLog {
	return &hopLog{seed: maphash.MakeSeed(), msgs: make(map[uint64]*hopMsg), visible: make(map[rooms.ID]map[int]time.Time), authored: make(map[rooms.ID]time.Time)}
}

// start forgets what was collected and follows the messages of node pub.
func (l *hopLog) start(pub int) {
	l.on.Store(false)
	l.mu.Lock()
	l.pub = l.peer(pub)
	l.msgs = make(map[uint64]*hopMsg)
	l.visible = make(map[rooms.ID]map[int]time.Time)
	l.authored = make(map[rooms.ID]time.Time)
	l.mu.Unlock()
	l.on.Store(true)
}

func (l *hopLog) stop() { l.on.Store(false) }

// msg returns the record of the message with these bytes. The caller
// holds mu.
func (l *hopLog) msg(data []byte) *hopMsg {
	k := maphash.Bytes(l.seed, data)
	m := l.msgs[k]
	if m == nil {
		m = &hopMsg{rx: make(map[peer.ID]*hopRx)}
		l.msgs[k] = m
	}
	return m
}

// published records that the publisher's Publish of data returned at t.
func (l *hopLog) published(data []byte, t time.Time) {
	if !l.on.Load() {
		return
	}
	l.mu.Lock()
	l.msg(data).published = t
	l.mu.Unlock()
}

// stage takes node i's room trace: the published stage (on the author
// only) and the visible stage.
func (l *hopLog) stage(i int, id rooms.ID, st rooms.Stage, at time.Time) {
	if !l.on.Load() || (st != rooms.StagePublished && st != rooms.StageVisible) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == rooms.StagePublished {
		if _, ok := l.authored[id]; !ok {
			l.authored[id] = at
		}
		return
	}
	v := l.visible[id]
	if v == nil {
		v = make(map[int]time.Time)
		l.visible[id] = v
	}
	if _, ok := v[i]; !ok {
		v[i] = at
	}
}

// tracer is node i's raw tracer; the node's peer ID is set with setPeers
// before the log is started.
func (l *hopLog) tracer(i int) pubsub.RawTracer { return hopTracer{l: l, i: i} }

// setPeers names the nodes' peer IDs, by index.
func (l *hopLog) setPeers(ids []peer.ID) {
	l.mu.Lock()
	l.peers = ids
	l.mu.Unlock()
}

type hopTracer struct {
	l *hopLog
	i int
}

// peer is node i's peer ID. The caller holds mu.
func (l *hopLog) peer(i int) peer.ID {
	if i >= 0 && i < len(l.peers) {
		return l.peers[i]
	}
	return ""
}

func (t hopTracer) RecvRPC(rpc *pubsub.RPC) {
	if !t.l.on.Load() || len(rpc.GetPublish()) == 0 {
		return
	}
	now := time.Now()
	for _, m := range rpc.GetPublish() {
		t.l.recv(t.i, rpc.From(), m.Data, now)
	}
}

func (t hopTracer) SendRPC(rpc *pubsub.RPC, _ peer.ID) {
	if !t.l.on.Load() || len(rpc.GetPublish()) == 0 {
		return
	}
	now := time.Now()
	for _, m := range rpc.GetPublish() {
		t.l.queue(t.i, m.Data, now)
	}
}

func (t hopTracer) DeliverMessage(msg *pubsub.Message) {
	if t.l.on.Load() {
		t.l.deliver(t.i, msg.ID, msg.Data, time.Now())
	}
}

// recv records that node i's GossipSub took in a message with these
// bytes from peer from.
func (l *hopLog) recv(i int, from peer.ID, data []byte, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	self := l.peer(i)
	if h := l.msg(data); h.rx[self] == nil {
		h.rx[self] = &hopRx{from: from, recv: at}
	}
}

// queue records that node i's GossipSub queued a message for a peer; only
// the publisher's first is kept.
func (l *hopLog) queue(i int, data []byte, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.peer(i) != l.pub {
		return
	}
	if h := l.msg(data); h.queued.IsZero() {
		h.queued = at
	}
}

// deliver records that node i's GossipSub delivered a message (ID id) to
// the topic's subscription.
func (l *hopLog) deliver(i int, id string, data []byte, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.msg(data)
	h.id = id
	if rx := h.rx[l.peer(i)]; rx != nil && rx.delivered.IsZero() {
		rx.delivered = at
	}
}

func (hopTracer) AddPeer(peer.ID, protocol.ID)                         {}
func (hopTracer) RemovePeer(peer.ID)                                   {}
func (hopTracer) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (hopTracer) OnClosedOutboundStream(peer.ID)                       {}
func (hopTracer) Join(string)                                          {}
func (hopTracer) Leave(string)                                         {}
func (hopTracer) Graft(peer.ID, string)                                {}
func (hopTracer) Prune(peer.ID, string)                                {}
func (hopTracer) ValidateMessage(*pubsub.Message)                      {}
func (hopTracer) RejectMessage(*pubsub.Message, string)                {}
func (hopTracer) DuplicateMessage(*pubsub.Message)                     {}
func (hopTracer) ThrottlePeer(peer.ID)                                 {}
func (hopTracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
func (hopTracer) DropRPC(*pubsub.RPC, peer.ID)                         {}
func (hopTracer) UndeliverableMessage(*pubsub.Message)                 {}

// roomTrace chains node i's room trace into the hop log.
func (l *hopLog) roomTrace(i int, next rooms.TraceFunc) rooms.TraceFunc {
	return func(room identity.RoomID, id rooms.ID, st rooms.Stage, at time.Time) {
		l.stage(i, id, st, at)
		if next != nil {
			next(room, id, st, at)
		}
	}
}

// breakdown sums up what was collected over the publisher's messages.
func (l *hopLog) breakdown() *Hops {
	l.mu.Lock()
	defer l.mu.Unlock()
	var queued, wire, relay, receive, visible []time.Duration
	out := &Hops{}
	index := make(map[peer.ID]int, len(l.peers))
	for i, p := range l.peers {
		index[p] = i
	}
	for _, m := range l.msgs {
		published := m.published
		var vis map[int]time.Time
		if len(m.id) == len(rooms.ID{}) {
			id := rooms.ID([]byte(m.id))
			vis = l.visible[id]
			if t, ok := l.authored[id]; ok {
				published = t
			}
		}
		if m.queued.IsZero() {
			continue // not the publisher's, or sent before the log was on
		}
		if !published.IsZero() {
			// The event loop may queue it before Publish returns.
			queued = append(queued, nonNegative(m.queued.Sub(published)))
		}
		for p, rx := range m.rx {
			if p == l.pub || rx.delivered.IsZero() {
				continue
			}
			out.Deliveries++
			if rx.from == l.pub {
				wire = append(wire, nonNegative(rx.recv.Sub(m.queued)))
			} else {
				out.Relayed++
				if r := m.rx[rx.from]; r != nil && !r.delivered.IsZero() {
					relay = append(relay, nonNegative(rx.recv.Sub(r.delivered)))
				}
			}
			receive = append(receive, rx.delivered.Sub(rx.recv))
			if i, ok := index[p]; ok {
				if t, ok := vis[i]; ok {
					visible = append(visible, nonNegative(t.Sub(rx.delivered)))
				}
			}
		}
	}
	if out.Deliveries == 0 {
		return nil
	}
	out.Queued, out.Wire, out.RelayWire = summarize(queued), summarize(wire), summarize(relay)
	out.Receive, out.Visible = summarize(receive), summarize(visible)
	return out
}

func nonNegative(d time.Duration) time.Duration { return max(d, 0) }
