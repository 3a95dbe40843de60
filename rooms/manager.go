package rooms

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/lograte"
	"github.com/parley-mesh/parley/internal/serving"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Policy decides whom this node deals with. Consent plugs in here; the
// default lets the node invite only peers it is connected to, and accepts
// everyone.
type Policy interface {
	// CanInvite returns nil if this node may invite target into a room.
	CanInvite(target peer.ID) error
	// Allowed returns nil if events, invites and sync from p are welcome.
	Allowed(p peer.ID) error
}

// DefaultSyncInterval is the anti-entropy period of a Config that sets
// none.
const DefaultSyncInterval = 30 * time.Second

// Config configures a Manager. Zero values are documented.
type Config struct {
	Host   host.Host      // required
	Store  Store          // required
	Key    crypto.PrivKey // the node's key; required
	Logger *slog.Logger   // nil discards
	// Registry receives metrics; nil means none are exported.
	Registry prometheus.Registerer
	// Policy decides invites and who may talk to us; nil: DefaultPolicy.
	Policy Policy
	// SyncInterval is the anti-entropy period; zero means
	// DefaultSyncInterval (30 s).
	SyncInterval time.Duration
	// PendingEvents and PendingBytes bound each room's pending pool; zero
	// means the Pending defaults.
	PendingEvents, PendingBytes int
	// PendingTotalEvents and PendingTotalBytes bound every room's pending
	// pool together (PendingShare); zero means DefaultPendingTotalEvents
	// and DefaultPendingTotalBytes. Bounds above about 8 million events or
	// 512 GiB are taken as those (NewPendingShare).
	PendingTotalEvents, PendingTotalBytes int
	// Trace, when set, is told when events pass the stages of their way
	// through this node (TraceFunc); nil costs nothing.
	Trace TraceFunc
	// OwnEventsWait bounds how long, after the node starts, a post in a
	// room waits for a member to say what it holds of this node's own
	// events (the node's data may be an older copy). Past it, a post is
	// refused with ErrOwnEventsUnknown while members are connected, and goes
	// ahead when none is (an offline node). Zero means DefaultOwnEventsWait;
	// negative: no wait.
	OwnEventsWait time.Duration
	// Now is the clock this node's events are dated by; nil: time.Now.
	// (Tests set it to a clock that is wrong, or that steps back.)
	Now func() time.Time
}

// MaxStepBack is how far the clock may step back between two of this
// node's events of a room for the later one to be dated just after the
// earlier all the same: a release dated before the claim it ends (NTP
// moved the clock back between the two) would end nothing, on every node.
// A clock set back by more than that (it was wrong by that much) dates
// events by itself again. It bounds as well how far ahead of the clock a
// parent may be dated for this node's event to be dated just after it: a
// clock a little behind the members' does not date an event before those
// it follows (a claim before the release it saw), and a member's clock
// set far ahead does not drag this node's along. It stays under the
// board's MaxAhead: events dated further ahead of the clock wait there,
// this node's own board's too.
const MaxStepBack = time.Minute

// DefaultOwnEventsWait is the default Config.OwnEventsWait.
const DefaultOwnEventsWait = 10 * time.Second

// Manager runs every room of one node: the GossipSub topics and their
// validators, the room goroutines, and the sync and invite protocols.
type Manager struct {
	cfg  Config
	self peer.ID
	log  *slog.Logger
	// pendingShare bounds the rooms' pending pools together.
	pendingShare *PendingShare
	// refusedLogs bounds the lines about input refused from peers.
	refusedLogs *lograte.Limiter
	metrics     *metrics

	beforeSync atomic.Pointer[func()] // tests: runs before a room's fsync of own events
	beforeTake atomic.Pointer[func()] // tests: runs before a room's reader takes an event from gossip
	// tests: consulted before a room's space check (space set) and each of
	// its writes; an error fails them as the store's would
	storeFault atomic.Pointer[func(space bool) error]
	syncFault  atomic.Pointer[func() error] // tests: fails a room's fsync of own events
	// tests: the most authors this node's Hellos list (0: MaxVV), so that
	// paging through a room's authors is tried without thousands of keys
	helloVV atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ps     *pubsub.PubSub
	notif  *network.NotifyBundle

	openMu sync.Mutex   // serializes open
	mu     sync.RWMutex // protects rooms
	rooms  map[identity.RoomID]*room

	spawnMu sync.Mutex // protects closing, so no goroutine starts after Close waits
	closing bool

	chMu    sync.Mutex // protects changes
	changes map[chan struct{}]bool

	topics map[string]*room // topic name → room; protected by mu

	meshMu sync.Mutex // protects mesh
	mesh   map[string]map[peer.ID]bool

	changeLog changeLog   // which rooms stored events lately (changes.go)
	leaving   leaving     // rooms this node left that still hand out its leave (membership.go)
	invites   invitesBook // invites waiting for the user's answer (invites.go)
	serving   slots       // sync requests being served (sync.go)
	servingMu sync.Mutex  // protects servingPeers
	// servingPeers is each peer's one serving slot, while a sync
	// request of it is served or waits (sync.go).
	servingPeers map[peer.ID]*peerServing
	asking       asking     // peers being asked which shared rooms they lack (retell.go)
	judged       judgedBook // rooms told back that a catch-up found this node out of (retell.go)
}

// Changes returns a channel that receives (without blocking the rooms)
// whenever events are stored in any room, and a function to stop.
func (m *Manager) Changes() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.chMu.Lock()
	if m.changes == nil {
		m.changes = make(map[chan struct{}]bool)
	}
	m.changes[ch] = true
	m.chMu.Unlock()
	return ch, func() {
		m.chMu.Lock()
		delete(m.changes, ch)
		m.chMu.Unlock()
	}
}

func (m *Manager) pulse() {
	m.chMu.Lock()
	defer m.chMu.Unlock()
	for ch := range m.changes {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// spawn runs f on a goroutine that Close waits for, unless Close began.
func (m *Manager) spawn(f func()) {
	m.spawnMu.Lock()
	defer m.spawnMu.Unlock()
	if m.closing {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// dropUnopened stops a room that failed to open after it joined its
// topic. Its reader may have pooled events already: once the room's
// goroutines end, its pool gives its part of the node's share back. (The
// caller holds openMu, which a room's goroutine may wait for, so the wait
// is not made here.)
func (m *Manager) dropUnopened(r *room) {
	m.spawnMu.Lock()
	r.cancel()
	m.spawnMu.Unlock()
	m.leaveTopic(r)
	m.spawn(func() {
		r.wg.Wait()
		r.pending.Clear()
	})
}

// New builds a Manager; it starts nothing until Start.
func New(cfg Config) (*Manager, error) {
	if cfg.Host == nil || cfg.Store == nil || cfg.Key == nil {
		return nil, errors.New("rooms: config needs Host, Store and Key")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SyncInterval == 0 {
		cfg.SyncInterval = DefaultSyncInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OwnEventsWait == 0 {
		cfg.OwnEventsWait = DefaultOwnEventsWait
	}
	if d, ok := cfg.Policy.(DefaultPolicy); cfg.Policy == nil || ok && d.Host == nil {
		cfg.Policy = DefaultPolicy{Host: cfg.Host}
	}
	self, err := peer.IDFromPrivateKey(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("rooms: %w", err)
	}
	m := &Manager{cfg: cfg, self: self, log: cfg.Logger, pendingShare: NewPendingShare(cfg.PendingTotalEvents, cfg.PendingTotalBytes), refusedLogs: lograte.New(20), rooms: make(map[identity.RoomID]*room), topics: make(map[string]*room),
		serving: make(slots, serveSlots())}
	m.metrics = newMetrics(cfg.Registry, m)
	return m, nil
}

// DefaultPolicy lets a node invite the peers it is connected to, and talks
// to everyone. A DefaultPolicy with a nil Host given to New gets New's Host.
type DefaultPolicy struct{ Host host.Host }

// CanInvite implements Policy.
func (d DefaultPolicy) CanInvite(target peer.ID) error {
	if c := d.Host.Network().Connectedness(target); c != network.Connected && c != network.Limited {
		return fmt.Errorf("%w: %s is not connected (connect first with `parley connect MULTIADDR`)", ErrInviteRefused, target)
	}
	return nil
}

// Allowed implements Policy.
func (DefaultPolicy) Allowed(peer.ID) error { return nil }

// PeerFilter is the GossipSub peer filter: on a room's topic only member
// nodes are kept. Pass it to pubsub.WithPeerFilter.
func (m *Manager) PeerFilter(pid peer.ID, topic string) bool {
	if !strings.HasPrefix(topic, TopicPrefix) {
		return true
	}
	m.mu.RLock()
	r := m.topics[topic]
	m.mu.RUnlock()
	if r == nil || !r.isMember(pid) {
		return false
	}
	return m.cfg.Policy.Allowed(pid) == nil
}

// Start joins the rooms this node is in and serves the sync and invite
// protocols. ps must have been built with PeerFilter.
func (m *Manager) Start(ctx context.Context, ps *pubsub.PubSub) error {
	m.ps = ps
	m.ctx, m.cancel = context.WithCancel(context.Background())
	var metas []struct {
		id   identity.RoomID
		meta Meta
	}
	err := m.cfg.Store.ScanFrom(schema.RoomIndexPrefix(), nil, false, func(k, v []byte) bool {
		id, err := identity.ParseRoomID(string(k[len(schema.RoomIndexPrefix()):]))
		if err != nil {
			return true
		}
		var meta Meta
		if err := json.Unmarshal(v, &meta); err != nil {
			m.log.Warn("room record unreadable; opening the room without it", "room", string(id), "err", err)
		}
		metas = append(metas, struct {
			id   identity.RoomID
			meta Meta
		}{id, meta})
		return true
	})
	if err != nil {
		return fmt.Errorf("rooms: list rooms: %w", err)
	}
	if err := m.loadInvites(); err != nil {
		return err
	}
	for _, rm := range metas {
		if rm.meta.Leaving {
			m.keepLeaving(rm.id, rm.meta)
		}
		if rm.meta.Left {
			continue // this node left it; a new invite opens it again
		}
		if _, err := m.open(rm.id, rm.meta, false); err != nil {
			// One damaged room must not keep the node (and its other
			// rooms) down: it stays on disk, unopened, and is named.
			m.log.Error("room not opened", "room", string(rm.id), "err", err)
			m.metrics.openFailed.Inc()
			continue
		}
	}
	m.spawn(m.antiEntropy)
	// A peer that connected while its rooms were starting refused the
	// invites retold to it then (retellInvites, on connection): they are
	// retold once it serves the invite protocol.
	watch, err := serving.Watch(m.ctx, m.cfg.Host, ProtocolInvite, func(p peer.ID) {
		m.spawn(func() { m.retellInvites(p) })
	})
	if err != nil {
		return fmt.Errorf("rooms: %w", err)
	}
	m.spawn(watch)
	// A peer whose ask of the rooms it lacks got no answer (its rooms
	// were starting, or it was busy past the retries) is asked again
	// once it serves the protocol (retell.go).
	watchHeld, err := serving.Watch(m.ctx, m.cfg.Host, ProtocolHeld, func(p peer.ID) {
		m.spawn(func() { m.retellRooms(p) })
	})
	if err != nil {
		return fmt.Errorf("rooms: %w", err)
	}
	m.spawn(watchHeld)
	// Invite before held: a peer asked which rooms it lacks (held) is
	// told them at once (invite), and is asked once per connected period
	// (retell.go). Held before sync: a peer that finds sync served and
	// held not is an older version, and is asked no more (askAgain).
	m.cfg.Host.SetStreamHandler(ProtocolInvite, m.handleInvite)
	m.cfg.Host.SetStreamHandler(ProtocolHeld, m.handleHeld)
	m.cfg.Host.SetStreamHandler(ProtocolSync, m.handleSync)
	m.cfg.Host.SetStreamHandler(ProtocolNudge, m.handleNudge)
	m.notif = &network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) { m.onConnected(c.RemotePeer()) },
		DisconnectedF: func(n network.Network, c network.Conn) {
			if n.Connectedness(c.RemotePeer()) != network.Connected {
				m.judged.forget(c.RemotePeer())
				m.asking.end(c.RemotePeer())
			}
			if !m.reachable(c.RemotePeer()) {
				m.onGone(c.RemotePeer())
			}
		},
	}
	m.cfg.Host.Network().Notify(m.notif)
	// A peer that connected before the notifiee was registered (a node
	// dialled while its rooms were starting) is caught up with and asked
	// as one that connects now; one connected period asks it once.
	for _, p := range m.cfg.Host.Network().Peers() {
		m.onConnected(p)
	}
	return nil
}

// Close stops every room. It is idempotent.
func (m *Manager) Close() error {
	if m.cancel == nil {
		return nil
	}
	m.spawnMu.Lock()
	m.closing = true
	m.spawnMu.Unlock()
	m.cancel()
	m.cfg.Host.RemoveStreamHandler(ProtocolSync)
	m.cfg.Host.RemoveStreamHandler(ProtocolInvite)
	m.cfg.Host.RemoveStreamHandler(ProtocolNudge)
	m.cfg.Host.RemoveStreamHandler(ProtocolHeld)
	if m.notif != nil {
		m.cfg.Host.Network().StopNotify(m.notif)
	}
	m.mu.Lock()
	rs := make([]*room, 0, len(m.rooms))
	for _, r := range m.rooms {
		rs = append(rs, r)
	}
	m.mu.Unlock()
	m.wg.Wait()
	for _, r := range rs {
		m.leaveTopic(r)
		r.closeListeners()
	}
	return nil
}

func (m *Manager) room(id identity.RoomID) *room {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.rooms[id]
}

// getRoom returns an open room for the API: a room told back that no
// catch-up has confirmed yet is not one (retell.go).
func (m *Manager) getRoom(id identity.RoomID) (*room, error) {
	if r := m.room(id); r != nil && !r.provisional() {
		return r, nil
	}
	return nil, fmt.Errorf("%w: %s (see `parley room list`)", ErrUnknownRoom, id)
}

// open starts a room: loads its state, joins its topic and starts its
// goroutines. With persist set it also records the room in the room list.
// A room opened from the store may hold an older copy of this node's own
// events than its members do, so it learns them before it posts; a room
// just created or joined cannot.
func (m *Manager) open(id identity.RoomID, meta Meta, persist bool) (*room, error) {
	return m.openRoom(id, meta, persist, !persist)
}

// openRoom is open; with learn set, the room learns this node's own events
// from a member before it posts (own.go), as a room told back to this node
// by a member must (retell.go).
func (m *Manager) openRoom(id identity.RoomID, meta Meta, persist, learn bool) (*room, error) {
	// openMu, not mu, is held across the pubsub calls below: GossipSub's
	// event loop calls PeerFilter, which takes mu.
	m.openMu.Lock()
	defer m.openMu.Unlock()
	if r := m.room(id); r != nil {
		return r, nil
	}
	return m.openLocked(id, meta, persist, learn, nil)
}

// openLocked is openRoom for a room not open; the caller holds openMu. The
// room's record is written (persist) only once the room has loaded and
// joined its topic: a room that fails to open leaves the record as it was.
//
// A room told back opens with prov set (retell.go): provisional, it is
// not persisted.
func (m *Manager) openLocked(id identity.RoomID, meta Meta, persist, learn bool, prov *provisional) (*room, error) {
	if m.ctx.Err() != nil {
		return nil, ErrClosed
	}
	r := newRoom(m, id, meta)
	r.prov = prov
	if err := r.load(); err != nil {
		return nil, err
	}
	r.learnOwn(learn)
	topic := meta.Topic
	if topic == "" {
		// Recorded before rooms kept their topic: derive it.
		topic = r.topicFromStore()
		r.meta.Topic = topic
	}
	r.ctx, r.cancel = context.WithCancel(m.ctx)
	if topic != "" {
		if err := m.joinTopic(r, topic); err != nil {
			r.cancel()
			return nil, fmt.Errorf("rooms: open %s: %w", id, err)
		}
	}
	if persist {
		raw, _ := json.Marshal(meta)
		if err := m.cfg.Store.Apply([]schema.Op{{Key: schema.RoomIndex(string(id)), Val: raw}}, true); err != nil {
			m.dropUnopened(r)
			return nil, fmt.Errorf("rooms: open %s: %w", id, err)
		}
	}
	m.mu.Lock()
	if m.ctx.Err() != nil {
		m.mu.Unlock()
		m.dropUnopened(r)
		return nil, ErrClosed
	}
	m.rooms[id] = r
	m.mu.Unlock()
	m.leaving.drop(id)
	m.changed(id)
	for _, p := range r.memberList() {
		if p != m.self && m.reachable(p) {
			r.requestSync(p)
		}
	}
	return r, nil
}

func (m *Manager) onConnected(p peer.ID) {
	m.mu.RLock()
	for _, r := range m.rooms {
		if r.isMember(p) {
			r.requestSync(p)
		}
	}
	m.mu.RUnlock()
	m.spawn(func() { m.retellInvites(p) })
	m.spawn(func() { m.retellRooms(p) })
}

// onGone ends what the rooms keep of p's connected period: p has no
// connection left.
func (m *Manager) onGone(p peer.ID) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, r := range m.rooms {
		r.syncPeerGone(p)
	}
}

func (m *Manager) reject(err error) {
	reason := "other"
	for _, k := range []struct {
		err  error
		name string
	}{
		{ErrBadSignature, "signature"}, {ErrTooLarge, "too_large"}, {ErrTooManyParents, "parents"},
		{ErrBadParents, "parents"}, {ErrBadDepth, "depth"}, {ErrNotMember, "not_member"},
		{ErrEquivocation, "equivocation"}, {ErrSeqGap, "seq_gap"}, {ErrNonCanonical, "malformed"},
		{ErrMalformed, "malformed"}, {ErrBadCreate, "bad_create"}, {ErrBadKind, "malformed"},
		{ErrBadVersion, "malformed"}, {ErrBadAuthor, "signature"}, {ErrBadSeq, "malformed"},
		{ErrNoConsent, "no_consent"}, {ErrNotCreator, "not_creator"},
	} {
		if errors.Is(err, k.err) {
			reason = k.name
			break
		}
	}
	m.metrics.rejected.WithLabelValues(reason).Inc()
}

// Self is this node's peer ID.
func (m *Manager) Self() peer.ID { return m.self }

// Create founds a room named name, without a purpose, and returns its ID.
func (m *Manager) Create(ctx context.Context, name string, agent identity.AgentName) (identity.RoomID, error) {
	return m.CreateRoom(ctx, name, "", agent)
}

// SayArgs is what Say posts.
type SayArgs struct {
	Agent   identity.AgentName
	Text    string
	ReplyTo *ID
	To      string // optional agent address the message is for
	Ask     bool   // post an ask (KindAsk) rather than a message
}

// Say posts a message and returns its ID once it is stored durably.
func (m *Manager) Say(ctx context.Context, id identity.RoomID, a SayArgs) (ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return ID{}, err
	}
	if len(a.Text) > MaxBody {
		return ID{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTextTooLong, len(a.Text), MaxBody)
	}
	if !utf8.ValidString(a.Text) {
		return ID{}, fmt.Errorf("%w: text is not valid UTF-8", ErrMalformed)
	}
	if a.ReplyTo != nil {
		if _, ok := r.depthOfShared(*a.ReplyTo); !ok {
			return ID{}, fmt.Errorf("%w: reply_to %s is not an event of room %s", ErrMalformed, a.ReplyTo, id)
		}
	}
	addr := agentAddr(a.Agent, m.self)
	if st, ok := r.agentState(addr); ok && !st.In {
		// Invited back, this node may be catching up: its join follows.
		if err := r.waitInviteCatchUp(ctx, func() error {
			return fmt.Errorf("%w (room %s: this node was invited back and is still catching up; %s posts once its join is in)", ErrOwnEventsUnknown, id, a.Agent)
		}); err != nil {
			return ID{}, err
		}
		if st, ok := r.agentState(addr); ok && !st.In {
			return ID{}, agentOut(st, a.Agent, id)
		}
	}
	if err := r.awaitOwnInvite(ctx); err != nil {
		return ID{}, err
	}
	kind := KindMessage
	if a.Ask {
		kind = KindAsk
	}
	return r.say(ctx, &sayReq{agent: a.Agent, kind: kind, body: []byte(a.Text), replyTo: a.ReplyTo, to: a.To})
}

// Post posts a claim or a release (KindClaim, KindRelease) with its body as
// package rooms/board encodes it, and returns its ID once it is stored
// durably.
func (m *Manager) Post(ctx context.Context, id identity.RoomID, agent identity.AgentName, kind Kind, body []byte) (ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return ID{}, err
	}
	if kind != KindClaim && kind != KindRelease {
		return ID{}, fmt.Errorf("%w: post %q", ErrBadKind, kind)
	}
	if len(body) > MaxBody {
		return ID{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTextTooLong, len(body), MaxBody)
	}
	if st, ok := r.agentState(agentAddr(agent, m.self)); ok && !st.In && kind == KindClaim {
		return ID{}, agentOut(st, agent, id) // a release is let through: it frees what others wait for
	}
	if err := r.awaitOwnInvite(ctx); err != nil {
		return ID{}, err
	}
	return r.say(ctx, &sayReq{agent: agent, kind: kind, body: body})
}

// agentOut is the error for an agent that is out of a room and speaks.
func agentOut(st AgentMember, agent identity.AgentName, id identity.RoomID) error {
	if st.Removed() {
		return fmt.Errorf("%w: %s was removed from room %s (event %s); a member of another node can invite it back", ErrAgentLeft, agent, id, st.Removal)
	}
	return fmt.Errorf("%w: %s left room %s; a member can invite it back", ErrAgentLeft, agent, id)
}

// Leave posts that agent leaves the room.
func (m *Manager) Leave(ctx context.Context, id identity.RoomID, agent identity.AgentName) (ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return ID{}, err
	}
	return r.say(ctx, &sayReq{agent: agent, kind: KindLeave})
}

// Join posts that agent joins the room (agents of member nodes may speak
// without it; it tells the others who is present).
func (m *Manager) Join(ctx context.Context, id identity.RoomID, agent identity.AgentName) (ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return ID{}, err
	}
	return r.say(ctx, &sayReq{agent: agent, kind: KindJoin})
}

// Info describes a room.
type Info struct {
	ID      identity.RoomID `json:"room_id"`
	Name    string          `json:"name"`
	Purpose string          `json:"purpose"`
	Creator peer.ID         `json:"creator"`
	Members []peer.ID       `json:"members"`
	// Agents are the member agents, NAME@PEER_ID, sorted.
	Agents []string `json:"agents"`
	Events uint64   `json:"events"`
	Heads  int      `json:"heads"`
	// InvitedBy is the node that invited this one (empty for the creator).
	InvitedBy peer.ID `json:"invited_by,omitempty"`
	// Opened is when this node opened the room (created it, took the
	// invite that let it in, or the user accepted one), by its own clock.
	Opened time.Time `json:"opened"`
	// Accepted says the node's user opened it by accepting its waiting
	// invite (Meta.Accepted).
	Accepted bool `json:"accepted,omitempty"`
}

// List describes every room this node is in, by name (not those told
// back and not confirmed yet: retell.go).
func (m *Manager) List() []Info {
	m.mu.RLock()
	rs := make([]*room, 0, len(m.rooms))
	for _, r := range m.rooms {
		rs = append(rs, r)
	}
	m.mu.RUnlock()
	out := make([]Info, 0, len(rs))
	for _, r := range rs {
		if !r.provisional() {
			out = append(out, r.info())
		}
	}
	slices.SortFunc(out, func(a, b Info) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(string(a.ID), string(b.ID))
	})
	return out
}

// SharesRoom reports whether p is a member node of a room this node is in,
// admitted there by a chain of invites in which no inviter is a node that
// cutOff reports (nil: none is): a member vouches for those it invites,
// and a node this user cut off (a revoked contact) vouches for nobody
// here (nor does a room told back and not confirmed yet: its members are
// what its tellers said), not even for a node it invited before it was cut off, whose events
// a room still takes when others build on them (see accept). Policies
// call it per event: it copies nothing unless p is a member somewhere,
// and reads an admitting event from the store once.
func (m *Manager) SharesRoom(p peer.ID, cutOff func(peer.ID) bool) bool {
	var in []*room
	m.mu.RLock()
	for _, r := range m.rooms {
		if r.isMember(p) {
			in = append(in, r)
		}
	}
	m.mu.RUnlock()
	for _, r := range in {
		if !r.provisional() && r.vouches(p, cutOff) {
			return true
		}
	}
	return false
}

// maxVouchChain bounds the invites vouches follows back.
const maxVouchChain = 64

// vouches reports whether p is a member of the room admitted through no
// inviter that cutOff reports: it follows the invites back from p's, to
// this node, to the room's creator, or to an inviter whose own admission
// the room does not know (not a member now, nor out with a record of it).
func (r *room) vouches(p peer.ID, cutOff func(peer.ID) bool) bool {
	admit, ok := r.admission(p, true)
	for range maxVouchChain {
		if !ok {
			return false
		}
		by, known := r.admitter(admit)
		switch {
		case !known:
			return false
		case by == r.m.self:
			return true
		case cutOff != nil && cutOff(by):
			return false
		}
		next, ok2 := r.admission(by, false)
		if !ok2 || next == admit {
			return true // the creator (its create admits it), or an inviter of unknown admission: vouched for here
		}
		admit = next
	}
	return false
}

// admission returns the event that admitted p: its membership's, or with
// member false also the last one of a membership that ended.
func (r *room) admission(p peer.ID, member bool) (ID, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if id, ok := r.members[p]; ok {
		return id, true
	}
	if o, ok := r.outs[p]; ok && !member {
		return o.admit, o.admit != ID{}
	}
	return ID{}, false
}

// admitter returns the author of an admitting event (an invite, or the
// room's create), reading it once from the store.
func (r *room) admitter(id ID) (peer.ID, bool) {
	r.admitMu.Lock()
	by, ok := r.admitters[id]
	r.admitMu.Unlock()
	if ok {
		return by, true
	}
	e, _, err := r.m.readEvent(r.id, id)
	if err != nil {
		return "", false
	}
	r.noteAdmitter(id, e.Author)
	return e.Author, true
}

// noteAdmitter records the author of an admitting event.
func (r *room) noteAdmitter(id ID, by peer.ID) {
	r.admitMu.Lock()
	defer r.admitMu.Unlock()
	if r.admitters == nil {
		r.admitters = make(map[ID]peer.ID)
	}
	r.admitters[id] = by
}

// Get describes one room.
func (m *Manager) Get(id identity.RoomID) (Info, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return Info{}, err
	}
	return r.info(), nil
}

func (r *room) info() Info {
	r.mu.RLock()
	defer r.mu.RUnlock()
	in := Info{ID: r.id, Name: r.meta.Name, Purpose: r.meta.Purpose, Creator: r.meta.Creator, Heads: len(r.headsSnap),
		InvitedBy: r.meta.InvitedBy, Opened: r.meta.Opened, Accepted: r.meta.Accepted, Agents: []string{}}
	for _, s := range r.committed {
		in.Events += s
	}
	in.Events += r.forks
	for p := range r.members {
		in.Members = append(in.Members, p)
	}
	for addr, a := range r.agents {
		if r.maskedLocked(a).In {
			in.Agents = append(in.Agents, addr)
		}
	}
	slices.Sort(in.Members)
	slices.Sort(in.Agents)
	return in
}

// Log returns up to limit events of a room in display order: the last ones,
// or with before set, the last ones before that event.
func (m *Manager) Log(id identity.RoomID, limit int, before *ID) ([]View, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	rid := string(id)
	prefix := schema.RoomOrderPrefix(rid)
	var start []byte
	if before != nil {
		d, ok := r.depthOfShared(*before)
		if !ok {
			return nil, fmt.Errorf("%w: event %s is not in room %s", ErrMalformed, before, id)
		}
		start = schema.RoomOrder(rid, d, before[:])
	}
	var ids []ID
	err = m.cfg.Store.ScanFrom(prefix, start, true, func(k, _ []byte) bool {
		var eid ID
		copy(eid[:], k[len(prefix)+8:])
		if before != nil && eid == *before {
			return true
		}
		ids = append(ids, eid)
		return len(ids) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("rooms: log %s: %w", id, err)
	}
	slices.Reverse(ids)
	out := make([]View, 0, len(ids))
	for _, eid := range ids {
		e, _, err := m.readEvent(id, eid)
		if err != nil {
			return nil, err
		}
		out = append(out, viewOf(eid, e))
	}
	return out, nil
}

// Since returns up to limit events in the order this node stored them,
// starting after the after-th; each View's Arrival says its place. Unlike the
// display order, arrival order only grows, so it makes a reliable cursor.
func (m *Manager) Since(id identity.RoomID, after uint64, limit int) ([]View, error) {
	if _, err := m.getRoom(id); err != nil {
		return nil, err
	}
	return m.since(id, after, limit)
}

// SinceKept is Since for a room this node is in or was in: the events of a
// room it left or was removed from stay stored, the one that took it out
// last, so a reader of arrivals sees that event too.
func (m *Manager) SinceKept(id identity.RoomID, after uint64, limit int) ([]View, error) {
	if _, err := m.getRoom(id); err != nil {
		if _, ok, lerr := m.cfg.Store.Lookup(schema.RoomIndex(string(id))); lerr != nil || !ok {
			return nil, err
		}
	}
	return m.since(id, after, limit)
}

func (m *Manager) since(id identity.RoomID, after uint64, limit int) ([]View, error) {
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	r := m.room(id)
	if r != nil {
		if out, ok := r.viewsSince(after, limit); ok {
			return out, nil
		}
	}
	rid := string(id)
	prefix := schema.RoomArrivalPrefix(rid)
	type ref struct {
		n  uint64
		id ID
	}
	var refs []ref
	err := m.cfg.Store.ScanFrom(prefix, schema.RoomArrival(rid, after+1), false, func(k, v []byte) bool {
		var eid ID
		copy(eid[:], v)
		refs = append(refs, ref{be8(k[len(prefix):]), eid})
		return len(refs) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("rooms: since %s: %w", id, err)
	}
	out := make([]View, 0, len(refs))
	for _, rf := range refs {
		if r != nil {
			if v, ok := r.recentView(rf.n, rf.id); ok {
				v.Arrival = rf.n
				out = append(out, v)
				continue
			}
		}
		e, _, err := m.readEvent(id, rf.id)
		if err != nil {
			return nil, err
		}
		v := viewOf(rf.id, e)
		v.Arrival = rf.n
		out = append(out, v)
	}
	return out, nil
}

// MinIDPrefix is the fewest characters of an event ID that EventByPrefix
// takes: the eight a room's log shows.
const MinIDPrefix = 8

// EventByPrefix returns the ID of the one stored event of room id whose ID
// begins with prefix (at least MinIDPrefix characters of its String form).
// No such event is ErrUnknownEvent; several are ErrAmbiguousID.
func (m *Manager) EventByPrefix(id identity.RoomID, prefix string) (ID, error) {
	if len(prefix) < MinIDPrefix || len(prefix) > idLen {
		return ID{}, fmt.Errorf("%w: event id %.60q: give at least %d of its %d characters", ErrMalformed, prefix, MinIDPrefix, idLen)
	}
	if len(prefix) == idLen {
		return ParseID(prefix)
	}
	whole := prefix[:len(prefix)/8*8] // 8 characters are 5 whole bytes
	head, err := idEnc.DecodeString(whole)
	if err != nil || strings.Trim(prefix, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		return ID{}, fmt.Errorf("%w: event id %q: not lower-case base32", ErrMalformed, prefix)
	}
	if _, err := m.getRoom(id); err != nil {
		return ID{}, err
	}
	keys := schema.RoomEvent(string(id), nil)
	var found []ID
	err = m.cfg.Store.ScanFrom(schema.RoomEvent(string(id), head), nil, false, func(k, _ []byte) bool {
		var eid ID
		if copy(eid[:], k[len(keys):]) != len(eid) || !strings.HasPrefix(eid.String(), prefix) {
			return true
		}
		found = append(found, eid)
		return len(found) < 2
	})
	switch {
	case err != nil:
		return ID{}, err
	case len(found) == 0:
		return ID{}, fmt.Errorf("%w: no event of room %s begins with %s", ErrUnknownEvent, id, prefix)
	case len(found) > 1:
		return ID{}, fmt.Errorf("%w: several events of room %s begin with %s: give more of the ID (room log --json shows it whole)", ErrAmbiguousID, id, prefix)
	}
	return found[0], nil
}

// Find looks for a stored event in every room.
func (m *Manager) Find(eid ID) (View, error) {
	m.mu.RLock()
	ids := make([]identity.RoomID, 0, len(m.rooms))
	for id := range m.rooms {
		ids = append(ids, id)
	}
	m.mu.RUnlock()
	for _, id := range ids {
		if _, err := m.getRoom(id); err != nil {
			continue // told back, not confirmed
		}
		if e, _, err := m.readEvent(id, eid); err == nil {
			return viewOf(eid, e), nil
		}
	}
	return View{}, fmt.Errorf("%w: no event %s on this node", ErrUnknownEvent, eid)
}

// Event returns one stored event of a room.
func (m *Manager) Event(id identity.RoomID, eid ID) (View, error) {
	if _, err := m.getRoom(id); err != nil {
		return View{}, err
	}
	e, _, err := m.readEvent(id, eid)
	if errors.Is(err, errNotStored) {
		// Not written yet (a member's record names its admission before
		// the event's batch is stored) or never here.
		return View{}, fmt.Errorf("%w: no event %s on this node", ErrUnknownEvent, eid)
	}
	if err != nil {
		return View{}, err
	}
	return viewOf(eid, e), nil
}

// readEvent reads and decodes a stored event. An event the store cannot
// read, or whose bytes do not hash to its ID, is damage: it is reported as
// ErrCorrupt and fetched again from the room's members.
func (m *Manager) readEvent(room identity.RoomID, id ID) (*Event, uint64, error) {
	v, ok, err := m.cfg.Store.Lookup(schema.RoomEvent(string(room), id[:]))
	if err != nil {
		m.corrupt(room, id)
		return nil, 0, fmt.Errorf("%w: read %s: %w", ErrCorrupt, id, err)
	}
	if !ok {
		return nil, 0, fmt.Errorf("%w: no event %s in room %s", errNotStored, id, room)
	}
	d, wire, err := checkStored(id, v)
	if err != nil {
		m.corrupt(room, id)
		return nil, 0, err
	}
	e, err := decodeStored(wire)
	if err != nil {
		m.corrupt(room, id)
		return nil, 0, fmt.Errorf("%w: event %s: %w", ErrCorrupt, id, err)
	}
	return e, d, nil
}

// corrupt notes a damaged event of a room, to fetch again.
func (m *Manager) corrupt(room identity.RoomID, id ID) {
	if r := m.room(room); r != nil {
		r.noteCorrupt(id)
	}
}

// depthOfShared is depthOf for goroutines other than the room's: it reads
// the recent events' depths, then the store (and caches nothing).
func (r *room) depthOfShared(id ID) (uint64, bool) {
	if d, ok := r.recent.get(id); ok {
		return d, true
	}
	v, ok, err := r.m.cfg.Store.Lookup(schema.RoomEvent(string(r.id), id[:]))
	if err != nil || !ok {
		return 0, false
	}
	d, _, err := splitStored(v)
	return d, err == nil
}

// Subscribe returns a channel of the room's newly stored events, in the
// order they are stored (a causal order), and a function to stop. The
// channel is closed if the reader falls more than buf events behind.
func (m *Manager) Subscribe(id identity.RoomID, buf int) (<-chan View, func(), error) {
	r, err := m.getRoom(id)
	if err != nil {
		return nil, nil, err
	}
	if buf <= 0 {
		buf = 1024
	}
	ch, stop := r.listen(buf)
	return ch, stop, nil
}

// VersionVector returns what this node holds of a room, as written to its
// store: for each author node, the highest seq held without a gap (every
// event from 1 to it is stored).
func (m *Manager) VersionVector(id identity.RoomID) (map[peer.ID]uint64, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return nil, err
	}
	return r.committedVV(), nil
}

// Members lists a room's member nodes.
func (m *Manager) Members(id identity.RoomID) ([]peer.ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return nil, err
	}
	return r.memberList(), nil
}

// Admission returns the event that admitted this node to the room for its
// current membership: the create event of a room it founded, or the
// invite that let it in (the invite of the node, or of one of its agents
// by name). ok is false while no such event is stored here (a room being
// opened on an invite not yet caught up).
func (m *Manager) Admission(id identity.RoomID) (v View, ok bool, err error) {
	r, err := m.getRoom(id)
	if err != nil {
		return View{}, false, err
	}
	r.mu.RLock()
	eid, ok := r.members[m.self]
	r.mu.RUnlock()
	if !ok {
		return View{}, false, nil
	}
	if v, err = m.Event(id, eid); err != nil {
		if errors.Is(err, ErrUnknownEvent) {
			return View{}, false, nil
		}
		return View{}, false, err
	}
	return v, true, nil
}

// SyncNow asks the room to catch up with p at once (tests and tools use it;
// sync also runs by itself).
func (m *Manager) SyncNow(ctx context.Context, id identity.RoomID, p peer.ID) error {
	r, err := m.getRoom(id)
	if err != nil {
		return err
	}
	return r.syncWith(ctx, p)
}

// View is a stored event as the API shows it.
type View struct {
	ID      ID                 `json:"id"`
	Room    identity.RoomID    `json:"room"`
	Author  peer.ID            `json:"author_peer"`
	Agent   identity.AgentName `json:"agent"`
	Seq     uint64             `json:"seq"`
	Depth   uint64             `json:"depth"`
	Kind    Kind               `json:"kind"`
	Text    string             `json:"text"`
	Purpose string             `json:"purpose,omitempty"` // create: the room's purpose
	ReplyTo *ID                `json:"reply_to,omitempty"`
	To      string             `json:"to,omitempty"`
	Target  peer.ID            `json:"target,omitempty"`
	Time    int64              `json:"time"`
	// Arrival is the event's place in this node's arrival log (Since only).
	Arrival uint64 `json:"arrival,omitempty"`
	// Body is the raw body of a claim or release (package rooms/board).
	Body []byte `json:"-"`
}

func viewOf(id ID, e *Event) View {
	v := View{ID: id, Room: e.Room, Author: e.Author, Agent: e.Agent, Seq: e.Seq, Depth: e.Depth,
		Kind: e.Kind, ReplyTo: e.ReplyTo, To: e.To, Time: e.Time}
	switch e.Kind {
	case KindMessage, KindAsk:
		v.Text = string(e.Body)
	case KindCreate:
		if len(e.Body) >= roomNonceLen {
			v.Text, v.Purpose = splitCreate(e.Body[roomNonceLen:])
		}
	case KindInvite:
		v.Target, _ = e.InviteTarget()
	case KindLeave:
		v.Target, _, _ = e.LeaveTarget()
	case KindClaim, KindRelease:
		v.Body = e.Body
	}
	return v
}

// randomMember picks a connected member other than this node.
func (r *room) randomMember() peer.ID {
	var cands []peer.ID
	for _, p := range r.memberList() {
		if p != r.m.self && r.m.reachable(p) && r.m.cfg.Policy.Allowed(p) == nil && !r.stalledFrom(p) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return ""
	}
	n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(cands))))
	return cands[n.Int64()]
}
