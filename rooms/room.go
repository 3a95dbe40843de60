package rooms

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// roomNonceLen is the size of the random nonce in a create event's body.
const roomNonceLen = 16

// DeriveRoomID returns the ID of the room founded by creator with nonce:
// only the creator can sign the create event of its room.
func DeriveRoomID(creator peer.ID, nonce []byte) identity.RoomID {
	h := sha256.New()
	h.Write([]byte("parley-room\x00"))
	h.Write([]byte(creator))
	h.Write(nonce)
	sum := h.Sum(nil)
	return identity.RoomID(idEnc.EncodeToString(sum[:16]))
}

// Meta is what a node keeps about a room it is in.
type Meta struct {
	Name      string    `json:"name"`
	Purpose   string    `json:"purpose,omitempty"`
	Creator   peer.ID   `json:"creator"`
	InvitedBy peer.ID   `json:"invited_by,omitempty"`
	Opened    time.Time `json:"opened"`
	// Left says this node is out of the room (it left or was removed): it
	// is not opened again until a new invite.
	Left bool `json:"left,omitempty"`
	// Leaving says the node still serves sync for the room (only), for
	// LeavingServeFor from LeftAt.
	Leaving bool `json:"leaving,omitempty"`
	// LeftAt is when this node left the room by itself: it serves the
	// room's sync to its members for LeavingServeFor from then at most.
	LeftAt time.Time `json:"left_at,omitzero"`
	// Topic is the room's GossipSub topic (TopicFor), from the create
	// event or, until it arrives, the invite.
	Topic string `json:"topic,omitempty"`
	// Accepted says the node's user opened the room by accepting its
	// waiting invite (AcceptInvite): the user knows of it, and the inbox
	// does not tell the invite as news. A later invite that opens the room
	// again makes a Meta without it.
	Accepted bool `json:"accepted,omitempty"`
}

// UnmarshalJSON reads a Meta, taking an empty or unreadable peer ID as
// none: a room whose create event has not arrived yet has no creator, and
// one bad field must not lose the others.
func (m *Meta) UnmarshalJSON(b []byte) error {
	var raw struct {
		Name      string    `json:"name"`
		Purpose   string    `json:"purpose"`
		Creator   string    `json:"creator"`
		InvitedBy string    `json:"invited_by"`
		Opened    time.Time `json:"opened"`
		Left      bool      `json:"left"`
		Leaving   bool      `json:"leaving"`
		LeftAt    time.Time `json:"left_at"`
		Topic     string    `json:"topic"`
		Accepted  bool      `json:"accepted"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	// A name or purpose as the create event gave it (written before it was
	// kept clean) is shown clean.
	*m = Meta{Name: cleanLine(raw.Name, MaxName), Purpose: cleanLine(raw.Purpose, MaxPurpose), Opened: raw.Opened, Left: raw.Left, Leaving: raw.Leaving, LeftAt: raw.LeftAt,
		Accepted: raw.Accepted}
	if validTopic(raw.Topic) {
		m.Topic = raw.Topic
	}
	m.Creator, _ = peer.Decode(raw.Creator)
	m.InvitedBy, _ = peer.Decode(raw.InvitedBy)
	return nil
}

// input is one thing for the room's goroutine to do.
type input struct {
	item    *Item      // an event from gossip or sync
	from    peer.ID    // who sent item
	catchUp bool       // item came by sync: it queues behind live inputs
	say     *sayReq    // an event to author
	barrier chan error // closed once everything before it is processed
	missing chan []ID  // receives the IDs the pending pool waits for
}

type sayReq struct {
	agent   identity.AgentName
	kind    Kind
	body    []byte
	replyTo *ID
	to      string
	res     chan sayRes
}

type sayRes struct {
	id  ID
	err error
}

// room is one room this node is in. Whoever holds procMu (its goroutine,
// run, or a submitter processing inline) owns the DAG state; mu guards the
// small snapshots that validators, sync and the API read.
type room struct {
	id    identity.RoomID
	m     *Manager
	inbox chan input // live inputs: events from gossip, says
	bulk  chan input // catch-up: events from sync, and sync's barriers

	ctx    context.Context    // ends when the room closes (the node leaves it) or the node stops
	cancel context.CancelFunc // ends ctx
	wg     sync.WaitGroup     // the room's goroutines

	// procMu is held by whoever processes a batch: the room's goroutine
	// (run), or a submitter that found the room idle (inline). The fields
	// below it, and arrivals, are owned by its holder.
	procMu  sync.Mutex
	heads   map[ID]uint64 // head → depth
	owesTip bool          // the next batch writes a tip whatever its arrivals (tip.go)
	pending *Pending
	recent  *depthCache // also read by validators
	ancBuf  []ID
	// headTime is the time (unix ms) of the heads this node stored, or
	// read since the room was loaded (stamp): noTime for one it could not
	// read. Heads only: an event that gets a child leaves it.
	headTime map[ID]int64
	// founded is the room's create event's time (unix ms), once known
	// (foundedKnown): it says whether first events name their invite
	// (namesAdmit).
	founded      int64
	foundedKnown bool
	// lastOwn is this node's latest event's seq and time, once known
	// (stamp). Its caller holds procMu.
	lastOwnSeq  uint64
	lastOwnTime int64
	// batchEvents are the events the batch in process stored, not yet
	// written: hasAncestor walks them as it walks the store.
	batchEvents map[ID]*Event

	runMu      sync.Mutex   // protects running and submitting
	running    bool         // run is running; it stops after roomIdle without input
	submitting int          // submits under way, which keep run from stopping
	queued     atomic.Int64 // live inputs queued for run and not processed yet
	lastInline atomic.Int64 // when a batch was last processed inline (unix ns)

	finMu      sync.Mutex // protects finQ and finRunning
	finQ       []*finish  // written batches to finish, in order
	finRunning bool       // finishLoop runs: later batches finish behind it

	pendingLen atomic.Int64 // pending.Len(), for metrics
	arrivals   uint64       // events stored here so far (the arrival log's last n); owned by procMu's holder

	viewMu sync.Mutex    // protects views
	views  []arrivalView // the latest arrivals' views while run runs (views.go)

	gsub atomic.Pointer[gossipSub] // the topic's subscription and its reader (gossip.go)

	mu          sync.RWMutex // protects the fields below
	meta        Meta
	members     map[peer.ID]ID     // member node → the create or invite event admitting it
	vv          map[peer.ID]uint64 // author → highest contiguous seq accepted
	committed   map[peer.ID]uint64 // the same, as far as it is written to the store
	forks       uint64             // forks written to the store (events outside committed)
	headsSnap   []ID
	listeners   map[int]chan View
	nextLis     int
	syncing     map[peer.ID]bool // peers with a sync queued or running
	resync      map[peer.ID]bool // peers asked for again while their sync ran: once more after it
	syncQ       chan peer.ID
	syncRunning int                            // syncWorkers running (sync.go)
	stalls      map[peer.ID]stall              // peers whose syncs made no progress lately (sync.go)
	syncRetries map[peer.ID]*syncRetry         // catch-ups asked again, by connected peer (sync.go: retrySync)
	syncedBack  map[peer.ID]uint64             // the lead each connected peer was last synced back for (sync.go: syncBack)
	backWaits   map[peer.ID]map[peer.ID]uint64 // peers a sync back waits to look again for: what their Hellos showed this node lacks, author → seq (sync.go: syncBackLater)
	// emptySyncs counts the catch-up sessions in a row that brought no
	// event (sync.go); anti-entropy visits the room less often while it
	// grows. aeTurns is the anti-entropy goroutine's own: the turns the
	// room skipped since its last sync.
	emptySyncs    atomic.Int32
	aeTurns       int
	topic         *pubsub.Topic          // the joined topic; nil while the room has none (topic.go)
	topicStr      string                 // its name
	unsub         func()                 // ends the topic's subscription (topic.go)
	agents        map[string]AgentMember // agent address → its membership (membership.go)
	outs          map[peer.ID]outRec     // nodes that left or were removed (membership.go)
	ownKnown      chan struct{}          // closed once this node knows its own next seq (own.go)
	unstored      []*Item                // own events published whose write failed: stored with the next batch (procMu)
	waitingFrom   time.Time              // since when some of unstored wait for their parents; zero if none does (procMu)
	joinWait      identity.AgentName     // a join to post once unstored is empty, unless an own join is stored first (procMu)
	joinAfterOwn  identity.AgentName     // a join to post once own events are learnt, unless one of them is (own.go)
	prov          *provisional           // set while the room, told back, waits for a member to show this node in (retell.go)
	ownSince      time.Time              // when the room began to learn it
	invCatchUps   int                    // catch-ups after an invite of this node that run (invite.go)
	invCaughtUp   chan struct{}          // closed when the last of them ends; nil while none runs
	wantHeads     map[ID]bool            // others' heads this node lacks, to want in its next sync
	corrupt       map[ID]bool            // damaged events to fetch again (corrupt.go)
	nCorrupt      atomic.Int64           // len(corrupt), read without mu
	repairs       uint64                 // damaged events written again
	vouchMu       sync.Mutex             // protects vouchedSeq (a leaf: nothing is locked under it)
	vouchedSeq    map[peer.ID]uint64     // authors vouched for up to a seq (see vouchedFor)
	admitMu       sync.Mutex             // protects admitters
	admitters     map[ID]peer.ID         // admitting events' authors (manager.go: vouches)
	outRefused    []Item                 // the last events refused as their author's, out of the room (procMu; membership.go)
	outRefusedLen int                    // their wires' bytes (procMu)
}

func newRoom(m *Manager, id identity.RoomID, meta Meta) *room {
	pending := NewPending(m.cfg.PendingEvents, m.cfg.PendingBytes)
	pending.Share(m.pendingShare)
	// An author admitted since its events were pooled in some other way
	// than by this room (a contact made, a membership in another room)
	// is found before its events are evicted as a stranger's.
	pending.Vet(func(a peer.ID) bool { return m.cfg.Policy.Allowed(a) != nil })
	return &room{
		id:          id,
		m:           m,
		inbox:       make(chan input, 1024),
		bulk:        make(chan input, 1024),
		heads:       make(map[ID]uint64),
		headTime:    make(map[ID]int64),
		pending:     pending,
		recent:      newDepthCache(depthCacheSize),
		meta:        meta,
		members:     make(map[peer.ID]ID),
		vv:          make(map[peer.ID]uint64),
		committed:   make(map[peer.ID]uint64),
		listeners:   make(map[int]chan View),
		syncing:     make(map[peer.ID]bool),
		resync:      make(map[peer.ID]bool),
		syncQ:       make(chan peer.ID, 64),
		stalls:      make(map[peer.ID]stall),
		syncRetries: make(map[peer.ID]*syncRetry),
		syncedBack:  make(map[peer.ID]uint64),
		backWaits:   make(map[peer.ID]map[peer.ID]uint64),
		agents:      make(map[string]AgentMember),
		outs:        make(map[peer.ID]outRec),
		wantHeads:   make(map[ID]bool),
		corrupt:     make(map[ID]bool),
	}
}

// load reads the room's state from the store: members, version vector and
// heads. It reads no events, so opening a big room is cheap.
func (r *room) load() error {
	db, rid := r.m.cfg.Store, string(r.id)
	members := make(map[peer.ID]ID)
	var ferr error
	err := db.ScanFrom(schema.RoomMemberPrefix(rid), nil, false, func(k, v []byte) bool {
		p, _, ok := peerFromKey(k[len(schema.RoomMemberPrefix(rid)):])
		if !ok || len(v) != len(ID{}) {
			ferr = fmt.Errorf("rooms: bad member key in %s", rid)
			return false
		}
		members[p] = ID(v)
		return true
	})
	var forks uint64
	if err == nil {
		err = db.ScanFrom(schema.RoomForkPrefix(rid), nil, false, func(_, _ []byte) bool {
			forks++
			return true
		})
	}
	var arrivals uint64
	if err == nil {
		ap := schema.RoomArrivalPrefix(rid)
		err = db.ScanFrom(ap, nil, true, func(k, _ []byte) bool {
			arrivals = be8(k[len(ap):])
			return false
		})
	}
	var l loaded
	if err == nil && ferr == nil {
		l, err = r.loadTip(arrivals)
	}
	if err == nil && l.migrate {
		// Written before tips: a tip replaces the keys at once, as the
		// events stored from now on do not keep them up to date. Durable:
		// a crash must not keep later events and lose it.
		err = db.Apply([]schema.Op{{Key: schema.RoomTip(rid), Val: tip{arrival: arrivals, vv: l.vv, heads: l.heads}.marshal()}}, true)
	}
	if err == nil && len(l.legacy) > 0 {
		r.dropLegacy(l.legacy)
	}
	if err = errors.Join(err, ferr); err != nil {
		return fmt.Errorf("rooms: load %s: %w", rid, err)
	}
	heads, vv := l.heads, l.vv
	r.heads = heads
	r.headTime = make(map[ID]int64, len(heads)) // read when first needed (stamp)
	r.arrivals = arrivals
	r.owesTip = l.owesTip
	r.mu.Lock()
	r.members, r.vv = members, vv
	r.forks = forks
	r.committed = make(map[peer.ID]uint64, len(vv))
	for a, s := range vv {
		r.committed[a] = s
	}
	r.headsSnap = mapKeys(heads)
	for _, id := range l.damaged {
		if len(r.corrupt) < maxCorrupt && !r.corrupt[id] {
			r.corrupt[id] = true
			r.m.metrics.corrupt.Inc()
			r.m.log.Error("a stored event is damaged; fetching it again from the members", "room", rid, "id", id.String())
		}
	}
	r.nCorrupt.Store(int64(len(r.corrupt)))
	r.mu.Unlock()
	return r.loadMembership()
}

func mapKeys(m map[ID]uint64) []ID {
	out := make([]ID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	return SortIDs(out)
}

// roomIdle is how long a room's goroutine waits for input before it
// stops: an idle room costs no goroutine.
const roomIdle = 2 * time.Second

// run is the room's goroutine: it takes queued inputs in batches and
// processes them (process). submit starts it; it stops after roomIdle
// without input, and the state it owns stays in the room for the next one
// (runMu and procMu order them).
func (r *room) run(ctx context.Context) {
	live := make([]input, 0, 2*liveBatch)
	bulk := make([]input, 0, liveBatch)
	idle := time.NewTimer(roomIdle)
	defer idle.Stop()
	for {
		live, bulk = live[:0], bulk[:0]
		select {
		case <-ctx.Done():
			r.runMu.Lock()
			r.running = false
			r.runMu.Unlock()
			return
		case in := <-r.inbox:
			live = append(live, in)
		case in := <-r.bulk:
			bulk = append(bulk, in)
		case <-idle.C:
			r.runMu.Lock()
			if len(r.inbox) == 0 && len(r.bulk) == 0 && r.submitting == 0 && time.Since(time.Unix(0, r.lastInline.Load())) >= roomIdle {
				r.running = false
				r.runMu.Unlock()
				r.dropViews()
				return
			}
			r.runMu.Unlock()
			idle.Reset(roomIdle)
			continue
		}
		live, bulk = takeBatch(r.inbox, r.bulk, live, bulk)
		// Live inputs first: a batch of catch-up is applied after them.
		r.procMu.Lock()
		r.process(ctx, append(live, bulk...))
		r.procMu.Unlock()
		r.queued.Add(-int64(len(live)))
		idle.Reset(roomIdle)
	}
}

// takeBatch adds to a batch that holds the input the room woke for (in
// live or in bulk) what waits in the live inbox, up to liveBatch, then
// catch-up from bulkq: up to liveBatch when the batch holds no live input,
// else bulkBatch, so that live events never wait long behind catch-up.
func takeBatch(inbox, bulkq <-chan input, live, bulk []input) ([]input, []input) {
	live = drainQueue(inbox, live, liveBatch)
	bulkMax := liveBatch
	if len(live) > 0 {
		bulkMax = bulkBatch
	}
	return live, drainQueue(bulkq, bulk, bulkMax)
}

// drainQueue appends to buf what waits in q, until buf holds limit.
func drainQueue(q <-chan input, buf []input, limit int) []input {
	for len(buf) < limit {
		select {
		case in := <-q:
			buf = append(buf, in)
		default:
			return buf
		}
	}
	return buf
}

// The most inputs one batch takes from the live inbox (gossip, says), and
// from the catch-up one (sync) when live inputs wait too: then a batch's
// catch-up is small, so live events never wait long behind one.
const (
	liveBatch = 256
	bulkBatch = 64
)

// txn collects one batch's effects.
type txn struct {
	txnFx
	ops      []schema.Op
	marks    []mark             // where each event's writes begin, one per event
	vv       map[peer.ID]uint64 // authors' seqs this batch stores
	accepted []View
	arrivals []uint64   // the arrival number of each of accepted
	own      []*Item    // own events, published before the write
	restored []*Item    // own events of earlier batches that went out unstored, taken in first (restoreUnstored)
	tip      *schema.Op // the room's tip as of the batch's end, written after it (tip.go)
	says     []pendingSay
	fetch    map[peer.ID]bool
	forks    int // forks this batch stores
}

// txnFx is what a batch's events do to the room beyond storing them,
// acted on once the batch is written.
type txnFx struct {
	admits   []peer.ID          // nodes admitted in this batch that have events pooled as a stranger's
	joinAs   identity.AgentName // set: this node posts its join as this agent
	selfOut  bool               // this node was removed from the room
	selfLeft bool               // this node left the room
	selfProv bool               // selfLeft or selfOut was applied while the room was provisional (told back)
	pruned   bool               // another node left or was removed
	topic    string             // the room's topic, learned from its create event, differs from the joined one
}

// mark is where an event's writes begin in a batch, and what the batch
// held before them: a batch written in part is cut back to the marks of
// the events stored.
type mark struct {
	op, accepted, own int
	fx                txnFx
}

// markEvent records that the next ops are one event's.
func (tx *txn) markEvent() {
	tx.marks = append(tx.marks, mark{op: len(tx.ops), accepted: len(tx.accepted), own: len(tx.own), fx: tx.txnFx})
}

// cut drops from the batch the events from the n-th on, which were not
// written.
func (tx *txn) cut(n int) {
	if n >= len(tx.marks) {
		return
	}
	k := tx.marks[n]
	tx.ops, tx.marks = tx.ops[:k.op], tx.marks[:n]
	tx.accepted, tx.arrivals, tx.own = tx.accepted[:k.accepted], tx.arrivals[:k.accepted], tx.own[:k.own]
	tx.txnFx = k.fx
}

type pendingSay struct {
	req *sayReq
	id  ID
	err error
}

// process applies a batch to the DAG and writes it (committed, not
// fsynced; a batch of others' events only, queued to the database; see
// write), with procMu held. Others' events are visible from there, as a
// crash loses nothing of them that sync does not bring back.
// This node's own events are published before the write and acknowledged
// once fsynced (group commit: the fsync runs beside the next batches, and
// one fsync serves every batch written before it). A node that crashes in
// between may have sent events its store lacks, and learns them back from
// its members before it posts again (own.go); one whose write fails keeps
// them and stores them with its next batch (restoreUnstored).
func (r *room) process(ctx context.Context, batch []input) {
	defer r.endBatchEvents()
	tx := &txn{}
	f := &finish{tx: tx}
	var missing []chan []ID
	arrived := r.arrivals
	// Own events that went out but whose write failed come first: the
	// batch's posts take the seqs after theirs.
	r.restoreUnstored(tx)
	for _, in := range batch {
		switch {
		case in.item != nil:
			r.receive(tx, *in.item, in.from)
		case in.say != nil:
			var id ID
			err := r.unstoredPosts()
			if err == nil {
				id, err = r.author(tx, in.say)
			}
			tx.says = append(tx.says, pendingSay{req: in.say, id: id, err: err})
		case in.barrier != nil:
			f.barriers = append(f.barriers, in.barrier)
		case in.missing != nil:
			missing = append(missing, in.missing)
		}
	}
	switch {
	case tx.joinAs != "" && len(r.unstored) > 0:
		// Own events that went out wait to be stored: a join now would
		// take the first one's seq (a fork). One of them may be this
		// node's join, written by an admission whose batch failed, and
		// its invite is back: the join waits for them.
		r.joinWait, tx.joinAs = tx.joinAs, ""
	case tx.joinAs == "" && r.joinWait != "" && len(r.unstored) == 0:
		tx.joinAs, r.joinWait = r.joinWait, ""
	}
	if tx.joinAs != "" {
		// This node's invite arrived (by whatever path): announce it.
		if _, err := r.author(tx, &sayReq{agent: tx.joinAs, kind: KindJoin}); err != nil {
			r.m.log.Warn("join failed", "room", string(r.id), "err", err)
		}
	}
	if len(tx.marks) > 0 && r.tipDue(arrived) {
		r.takeTip(tx)
	}
	// Own events go out before the batch is written: gossip does not wait
	// for the store. Should the write then fail, members hold own events
	// that this store lacks: the next batch stores them before its posts
	// (writeFailed, restoreUnstored). A disk too full for the batch is
	// found before anything goes out.
	published, meshEmpty := false, false
	if len(tx.ops) > 0 {
		if err := r.checkSpace(tx); err != nil {
			r.writeFailed(tx, f, 0, err, false)
		} else {
			if len(tx.own) > 0 {
				// The mesh as the events go out: read after publishing, a
				// heartbeat's graft a moment later would hide that gossip
				// reached no one.
				meshEmpty = r.m.meshSize(r.topicName()) == 0
				published = r.publish(ctx, tx)
				// Publishing woke GossipSub's event loop, which hands the
				// events to the goroutines that write to the mesh peers:
				// they run before this batch's write and fsync, which
				// would otherwise hold this P while they wait (cmd-testnet
				// -baseline, "queued": p50 0.20 → 0.08 ms, p99 4–6 →
				// 0.5–0.7 ms at 12 nodes on 2 cores).
				runtime.Gosched()
			}
			if wrote, err := r.write(tx); err != nil {
				r.writeFailed(tx, f, wrote, err, published)
			} else if tx.tip != nil {
				r.writeTip(tx)
			}
		}
	}
	f.sync = len(tx.own) > 0
	self := r.m.self
	if f.werr == nil {
		r.keepViews(tx)
	}
	r.admitPooled(tx)
	r.mu.Lock()
	r.headsSnap = mapKeys(r.heads)
	if f.werr == nil {
		for a, s := range tx.vv {
			if a != self || !f.sync {
				r.committed[a] = s
			}
		}
		r.forks += uint64(tx.forks)
	}
	r.mu.Unlock()
	tr := r.m.cfg.Trace
	// Others' events are visible now, unless an earlier batch still waits
	// for its fsync: then they follow its events, which may be their
	// parents, so listeners always see parents first.
	behind := r.finishing()
	if len(tx.accepted) > len(tx.own) {
		if tr != nil {
			r.traceBatch(tr, tx.accepted, false, StageStored, time.Now())
		}
		if behind {
			f.others = true
		} else {
			r.deliver(tx, false)
			if tr != nil {
				r.traceBatch(tr, tx.accepted, false, StageVisible, time.Now())
			}
		}
	}
	// No mesh yet (just joined): gossip reached no one, so the members are
	// asked to pull instead of waiting for anti-entropy, once the events
	// are durable. This node's join is always followed by a nudge: it goes
	// out a few milliseconds after the topic was joined, often before
	// GossipSub's heartbeat grafts a first peer, and the mesh read above
	// can still race a prune.
	f.nudgeAll = f.sync && (!published || meshEmpty || hasOwnJoin(tx))
	r.pendingLen.Store(int64(r.pending.Len()))
	for p := range tx.fetch {
		r.requestSync(p)
	}
	if len(missing) > 0 {
		ids := r.pending.Missing()
		for _, ch := range missing {
			ch <- ids
		}
	}
	if !f.sync && !behind {
		r.complete(f, nil)
		return
	}
	r.queueFinish(f)
}

// hasOwnJoin reports whether tx carries this node's join of the room.
func hasOwnJoin(tx *txn) bool {
	for _, it := range tx.own {
		if it.Event.Kind == KindJoin {
			return true
		}
	}
	return false
}

// publish sends the batch's own events to the room's topic, and reports
// whether it has one (an invitee before the create event has none: the
// nudge after the fsync tells the members).
func (r *room) publish(ctx context.Context, tx *txn) bool {
	topic := r.currentTopic()
	if topic == nil {
		return false
	}
	tr := r.m.cfg.Trace
	for k, it := range tx.own {
		if err := topic.Publish(ctx, it.Wire, pubsub.WithValidatorData(it)); err != nil && ctx.Err() == nil {
			r.m.log.Warn("publish failed; sync will deliver it", "room", string(r.id), "err", err)
		} else if tr != nil {
			r.tracePublished(tr, tx, k)
		}
	}
	return true
}

// checkSpace reports whether the store has room for a batch that holds
// own events (they go out before the write) or is to be written in
// several transactions (so that it does not fail part way for a full
// disk), when the store can tell: store.DB refuses writes near a full
// disk with store.ErrDiskFull. Other batches leave it to the write.
func (r *room) checkSpace(tx *txn) error {
	if fault := r.m.storeFault.Load(); fault != nil {
		if err := (*fault)(true); err != nil {
			return err
		}
	}
	sc, ok := r.m.cfg.Store.(interface{ CheckSpace(n int) error })
	if !ok {
		return nil
	}
	n := 0
	for _, op := range tx.ops {
		n += len(op.Key) + len(op.Val) + writeOpCost
	}
	if len(tx.own) == 0 && n <= writeChunk {
		return nil
	}
	return sc.CheckSpace(n)
}

// maxUnstored bounds the own events kept in memory to store again.
const maxUnstored = 1024

// unstoredWait bounds how long own events that went out unstored wait for
// their parents (nanoseconds; SetUnstoredWait in tests).
var unstoredWait atomic.Int64

func init() { unstoredWait.Store(int64(DefaultUnstoredWait)) }

// DefaultUnstoredWait is how long an own event that went out but could not
// be stored waits for parents that were lost with it; past it, it is let
// go and posts go on. Sync brings such parents within seconds while a
// member that holds them is connected and allowed.
const DefaultUnstoredWait = 2 * time.Minute

// restoreUnstored hands the batch, first, the own events that went out
// but whose write failed, as if they came back from a member: stored
// before the batch's own posts, which so take the seqs after theirs. One
// whose parents were lost with it (others' events of the failed batch)
// waits in the pending pool for sync to bring them; it is kept, and posts
// are refused until it is stored (unstoredPosts), for up to unstoredWait:
// no member may ever send its parents (the only one that holds them was
// cut off since, or removed), and posts must not be refused for good.
// Then it is let go, and the next post takes its seq: a member that stored
// it holds two events of this node with one seq, a fork, which the room
// keeps. One the room refuses is let go.
func (r *room) restoreUnstored(tx *txn) {
	if len(r.unstored) == 0 {
		return
	}
	for _, it := range r.unstored {
		r.receive(tx, *it, "")
	}
	// Those not waiting for parents are the batch's now: should its write
	// fail too, writeFailed puts them back.
	var waiting []*Item
	expired := !r.waitingFrom.IsZero() && time.Since(r.waitingFrom) > time.Duration(unstoredWait.Load())
	for _, it := range r.unstored {
		if r.pending.Has(it.ID) {
			if expired {
				r.m.log.Warn("an own event that went out unstored is let go: no member sent its parents in time; the next post takes its seq",
					"room", string(r.id), "id", it.ID.String(), "seq", it.Event.Seq, "waited", time.Since(r.waitingFrom).Round(time.Second).String())
				r.pending.Discard(it.ID)
				continue
			}
			waiting = append(waiting, it)
		} else {
			tx.restored = append(tx.restored, it)
		}
	}
	r.unstored = waiting
	switch {
	case len(waiting) == 0:
		r.waitingFrom = time.Time{}
	case r.waitingFrom.IsZero():
		r.waitingFrom = time.Now()
	}
	if len(r.unstored) > 0 {
		for _, p := range r.memberList() {
			if p != r.m.self && r.m.reachable(p) {
				r.requestSync(p)
			}
		}
	}
}

// allowedMember reports whether p is this node, or a member of the room
// that the policy allows (not cut off).
func (r *room) allowedMember(p peer.ID) bool {
	return p == r.m.self || r.isMember(p) && r.m.cfg.Policy.Allowed(p) == nil
}

// An event that this node or a member the policy allows built on is
// vouched for, and so is every event a vouched one built on: their
// authors may be nodes the policy refuses. An event is vouched for when an
// allowed or vouched event waits for it in the pending pool, and then its
// author is vouched for up to its seq (vouchedSeq): the author's events before it are in its past or forks of it,
// and a sync sends an author's events in causal order, parents first, so
// they come in at once on the next round, whatever their number (the
// pending pool could not hold a long run of them, nor a walk through it
// stay cheap).

// vouchedFor reports whether it is vouched for, and vouches its author up
// to its seq if so.
func (r *room) vouchedFor(it Item) bool {
	e := it.Event
	if e.Seq <= r.vouchedBound(e.Author) {
		return true
	}
	if !r.pending.WaitedOnBy(it.ID, func(w *Event) bool {
		return w != nil && (w.Seq <= r.vouchedBound(w.Author) || r.allowedMember(w.Author))
	}) {
		return false
	}
	r.raiseVouched(e.Author, e.Seq)
	return true
}

// raiseVouched vouches for author a up to seq.
func (r *room) raiseVouched(a peer.ID, seq uint64) {
	r.vouchMu.Lock()
	defer r.vouchMu.Unlock()
	if seq <= r.vouchedSeq[a] {
		return
	}
	if r.vouchedSeq == nil {
		r.vouchedSeq = make(map[peer.ID]uint64)
	}
	r.vouchedSeq[a] = seq
}

// vouchedBound is the seq up to which author a is vouched for.
func (r *room) vouchedBound(a peer.ID) uint64 {
	r.vouchMu.Lock()
	defer r.vouchMu.Unlock()
	return r.vouchedSeq[a]
}

// vouchesParents reports whether the parents a pooled event waits for are
// vouched for by it: it is this node's or an allowed member's, or vouched
// for itself.
func (r *room) vouchesParents(it Item) bool {
	return r.allowedMember(it.Event.Author) || r.vouchedFor(it)
}

// unstoredPosts is the error for a post while an own event that went out
// is not stored yet (see restoreUnstored): it would take that event's seq.
func (r *room) unstoredPosts() error {
	if len(r.unstored) == 0 {
		return nil
	}
	return fmt.Errorf("%w (room %s: %d event(s) of this node went out but are not stored yet; they wait for their parents from a member)",
		ErrOwnEventsUnknown, r.id, len(r.unstored))
}

// writeFailed handles a batch whose write failed after its first wrote
// events were stored: the room's state is read back from the store, and
// the batch is cut back to those events, which are finished as written
// (shown, acknowledged once fsynced; with none, f.werr fails the whole
// batch). Others' events cut come back through sync; own says cut fail,
// and if their events went out, the next batch stores them first
// (restoreUnstored).
func (r *room) writeFailed(tx *txn, f *finish, wrote int, err error, published bool) {
	r.m.log.Error("room write failed", "room", string(r.id), "err", err, "events_written", wrote, "events", len(tx.marks))
	if lerr := r.load(); lerr != nil {
		r.m.log.Error("room reload failed", "room", string(r.id), "err", lerr)
	}
	r.recent.clear()
	// Own events of earlier batches that this one took in and did not
	// store wait again, ahead of the rest (their seqs are older): without
	// them the room, read back, would give their seqs to the next posts.
	var back []*Item
	for _, it := range tx.restored {
		if _, ok := r.depthOf(it.ID); !ok {
			back = append(back, it)
		}
	}
	if len(back) > 0 {
		r.unstored = append(back, r.unstored...)
	}
	// Own events cut that went out: members may hold them, so the next
	// batch stores them before its own posts, and no seq is used twice.
	if wrote < len(tx.marks) {
		if published {
			r.unstored = append(r.unstored, tx.own[tx.marks[wrote].own:]...)
		}
		if len(r.unstored) > maxUnstored {
			r.m.log.Error("own events published but not stored: dropping the oldest; the room learns them back from its members after a restart",
				"room", string(r.id), "dropped", len(r.unstored)-maxUnstored)
			r.unstored = slices.Delete(r.unstored, 0, len(r.unstored)-maxUnstored)
		}
	}
	tx.cut(wrote)
	// load read the version vectors and forks of what was written.
	tx.vv, tx.forks = nil, 0
	werr := fmt.Errorf("rooms: store event: %w", err)
	for i := range tx.says {
		if s := &tx.says[i]; s.err == nil && !tx.saidHere(s.id) {
			s.err = werr
			if published {
				// Members hold it: a caller that posted again would
				// post it twice.
				s.err = sentNotStored(s.id, err)
			}
		}
	}
	if wrote == 0 {
		f.werr = err
	} else {
		f.partErr = werr
	}
}

// writeChunk bounds the bytes of keys and values (each op counted with
// writeOpCost more) that one store transaction of a batch takes. The
// store bounds a transaction by its memtable (Badger: 15 % of 4 MiB, about
// 629 KB, each op counted with less than writeOpCost), and a batch has no
// bound of its own: one event can release hundreds from the pending pool.
const (
	writeChunk  = 320 << 10
	writeOpCost = 32
)

// write applies the batch's ops in order, in one transaction or, when they
// are more than writeChunk, in several that each end between two events'
// writes: events are stored after their parents, so whatever prefix of
// the batch is stored when a write fails is a valid room (and load reads
// it back). It returns how many events the transactions written hold.
func (r *room) write(tx *txn) (int, error) {
	ops, marks := tx.ops, tx.marks
	// A batch of others' events only need not wait for Badger to write
	// it: reads that begin later see it, and its events are visible
	// sooner. Own events wait, so that a failed write is known before
	// their says are answered.
	queue := len(tx.own) == 0
	start, size, events := 0, 0, 0
	next := 0 // the mark of the next event's writes
	for i, op := range ops {
		for next < len(marks) && marks[next].op == i {
			if size >= writeChunk && i > start {
				if err := r.apply(ops[start:i], queue); err != nil {
					return events, err
				}
				start, size, events = i, 0, next
			}
			next++
		}
		size += len(op.Key) + len(op.Val) + writeOpCost
	}
	if err := r.apply(ops[start:], queue); err != nil {
		return events, err
	}
	return len(marks), nil
}

// apply writes ops in one transaction, not fsynced. With queue set and a
// store that can, it returns once the transaction is queued (a read that
// begins later sees it) rather than written.
func (r *room) apply(ops []schema.Op, queue bool) error {
	if fault := r.m.storeFault.Load(); fault != nil {
		if err := (*fault)(false); err != nil {
			return err
		}
	}
	if qs, ok := r.m.cfg.Store.(queuedStore); ok && queue {
		return qs.ApplyQueued(ops)
	}
	return r.m.cfg.Store.Apply(ops, false)
}

// finish is what a written batch leaves to do, in batch order: wait for
// its own events to be durable, make the rest of its events visible,
// answer its says and barriers, act on membership changes.
type finish struct {
	tx       *txn
	werr     error        // the batch's write failed
	sync     bool         // it holds own events: fsync before finishing
	others   bool         // others' events still to make visible
	nudgeAll bool         // ask every member to pull (no mesh yet)
	barriers []chan error // answered once the batch is finished
	partErr  error        // the batch was written in part: its barriers fail
}

// finishing reports whether a batch waits to be finished: later ones
// finish behind it.
func (r *room) finishing() bool {
	r.finMu.Lock()
	defer r.finMu.Unlock()
	return r.finRunning
}

// queueFinish queues f behind the batches still finishing, and starts the
// goroutine that finishes them if it does not run. A closing room, which
// starts no goroutine, finishes them here.
func (r *room) queueFinish(f *finish) {
	r.finMu.Lock()
	r.finQ = append(r.finQ, f)
	start := !r.finRunning
	r.finRunning = true
	r.finMu.Unlock()
	if start && !r.goRoom(r.finishLoop) {
		r.finishLoop(r.ctx)
	}
}

// finishLoop finishes queued batches in order until none is left. One
// fsync covers every batch taken: all were written before it began.
func (r *room) finishLoop(context.Context) {
	for {
		r.finMu.Lock()
		fs := r.finQ
		r.finQ = nil
		if len(fs) == 0 {
			r.finRunning = false
			r.finMu.Unlock()
			return
		}
		r.finMu.Unlock()
		var serr error
		for _, f := range fs {
			if f.sync {
				if hold := r.m.beforeSync.Load(); hold != nil {
					(*hold)()
				}
				if fault := r.m.syncFault.Load(); fault != nil {
					if serr = (*fault)(); serr != nil {
						break
					}
				}
				serr = r.m.cfg.Store.Sync()
				break
			}
		}
		for _, f := range fs {
			r.complete(f, serr)
		}
	}
}

// complete finishes a written batch: serr is the fsync's error for a
// batch with own events.
func (r *room) complete(f *finish, serr error) {
	tx, self, tr := f.tx, r.m.self, r.m.cfg.Trace
	if f.others {
		r.deliver(tx, false)
		if tr != nil {
			r.traceBatch(tr, tx.accepted, false, StageVisible, time.Now())
		}
	}
	if f.sync {
		if serr != nil {
			r.m.log.Error("room sync failed", "room", string(r.id), "err", serr)
			serr = fmt.Errorf("rooms: store event: %w", serr)
		} else {
			r.mu.Lock()
			if s, ok := tx.vv[self]; ok && s > r.committed[self] {
				r.committed[self] = s
			}
			r.mu.Unlock()
		}
		if tr != nil {
			r.traceBatch(tr, tx.accepted, true, StageDurable, time.Now())
		}
		r.deliver(tx, true)
		if tr != nil {
			r.traceBatch(tr, tx.accepted, true, StageVisible, time.Now())
		}
		// Now that the events are durable a sync serves them. Members
		// behind a relay alone are asked in any case.
		r.nudgeMembers(f.nudgeAll)
	}
	for _, s := range tx.says {
		err := s.err
		if err == nil && f.werr != nil {
			err = fmt.Errorf("rooms: store event: %w", f.werr)
		}
		if err == nil && serr != nil {
			// Written and shown: the room builds on it, and members get
			// it by gossip or, once a later fsync commits it, by sync.
			err = sentNotStored(s.id, serr)
		}
		s.req.res <- sayRes{id: s.id, err: err}
	}
	for _, b := range f.barriers {
		b <- cmp.Or(f.werr, f.partErr)
	}
	if f.werr == nil {
		r.afterMembership(tx)
		if tx.topic != "" {
			r.m.spawn(func() { r.m.switchTopic(r, tx.topic) })
		}
	}
}

// receive takes an event from the network: stores it if its parents are
// stored and it is valid, or parks it in the pending pool.
func (r *room) receive(tx *txn, it Item, from peer.ID) {
	if r.repair(tx, it) {
		return
	}
	if r.storedAlready(it) || r.pending.Has(it.ID) {
		r.m.metrics.duplicate.Inc()
		return
	}
	var missing []ID
	for _, p := range it.Event.Parents {
		if _, ok := r.depthOf(p); !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		// An author the policy refuses (a stranger, by all this node
		// knows yet) is held in the pool's small strangers' share: sync
		// vets no author before an event's parents are stored.
		stranger := r.m.cfg.Policy.Allowed(it.Event.Author) != nil
		if r.pending.AddFrom(it.ID, it.Event, it.Wire, missing, stranger) {
			if from != "" && from != r.m.self {
				if tx.fetch == nil {
					tx.fetch = make(map[peer.ID]bool)
				}
				tx.fetch[from] = true
			}
			if r.vouchesParents(it) {
				r.retryBuiltOn(tx, it, missing, from)
			}
		}
		return
	}
	queue := []Item{it}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if err := r.accept(tx, cur); err != nil {
			r.keepOutRefused(cur, err)
			r.m.reject(err)
			r.m.log.Debug("event refused", "room", string(r.id), "id", cur.ID.String(), "author", cur.Event.Author.String(), "err", err)
			r.pending.Discard(cur.ID)
			continue
		}
		queue = append(queue, r.pending.Ready(cur.ID)...)
	}
}

// accept checks an event whose parents are all stored against the room's
// rules and stores it.
func (r *room) accept(tx *txn, it Item) error {
	e := it.Event
	if e.Room != r.id {
		return fmt.Errorf("%w: event for room %s", ErrMalformed, e.Room)
	}
	if r.storedAlready(it) {
		return nil // stored meanwhile (a duplicate from the pool)
	}
	if e.Author != r.m.self {
		// Whatever path it came by: a node this user cut off (revoked,
		// expired) gets no new events in by itself. A stranger that
		// founded the room is in it, like every member its invites vouch
		// for. An event that this node, or a member it takes events from,
		// built on is let in too (vouched: see vouch): without it that
		// event, and every later one built on it, could never be stored,
		// and the room would be split here for good (the node's own
		// events that went out unstored, and every member's post after a
		// cut-off member spoke). The room's own rules still hold for it
		// (checkAuthor), and the inbox keeps events of nodes the policy
		// refuses from this node's agents. So is one of a stranger that
		// was a member and is out now, when checkAuthor would take it (a
		// member built on it, or its own leave): the room let it in while
		// it was in.
		if err := r.m.cfg.Policy.Allowed(e.Author); err != nil && !(errors.Is(err, ErrStranger) && (r.founds(e) || r.takesFromOut(it))) && !r.vouchedFor(it) {
			return fmt.Errorf("%w: %w", ErrNoConsent, err)
		}
	}
	depths := make([]uint64, len(e.Parents))
	for i, p := range e.Parents {
		d, ok := r.depthOf(p)
		if !ok {
			return fmt.Errorf("%w: parent %s not stored", ErrMalformed, p)
		}
		depths[i] = d
	}
	if e.Kind != KindCreate {
		if err := e.CheckDepth(depths); err != nil {
			return err
		}
	}
	r.mu.RLock()
	cur := r.vv[e.Author]
	admit, member := r.members[e.Author]
	r.mu.RUnlock()
	// A seq the author already used here, by another event, is a fork: the
	// author posted from an older copy of its data (or equivocates). Both
	// events are valid and signed; every node keeps both, whichever came
	// first, so all end up with the same events in the same display order
	// and nobody is cut off. Only the first to arrive holds the seq in the
	// sequence index; the author's next seq follows the highest.
	fork := e.Seq <= cur
	switch {
	case fork && e.Kind == KindCreate:
		return fmt.Errorf("%w: a second create event for room %s", ErrEquivocation, r.id)
	case e.Seq > cur+1:
		return fmt.Errorf("%w: %s seq %d after %d", ErrSeqGap, e.Author, e.Seq, cur)
	}
	switch {
	case e.Kind == KindCreate:
		if !r.founds(e) {
			return fmt.Errorf("%w: it does not found room %s", ErrBadCreate, r.id)
		}
	default:
		// A new member's first event must have its invite in its causal
		// past; later ones follow from the author's seq chain.
		if err := r.checkAuthor(it.ID, e, admit, member); err != nil {
			return err
		}
	}
	var target peer.ID
	switch e.Kind {
	case KindInvite:
		t, err := e.InviteTarget()
		if err != nil {
			return err
		}
		target = t
	case KindMessage, KindAsk:
		if !utf8.Valid(e.Body) {
			return fmt.Errorf("%w: message text is not UTF-8", ErrMalformed)
		}
	}
	if fork {
		r.m.metrics.forks.Inc()
		r.m.log.Warn("an author reused a seq; keeping both events", "room", string(r.id), "author", e.Author.String(), "seq", e.Seq, "id", it.ID.String())
	}
	r.store(tx, it, target, fork)
	return nil
}

// founds reports whether e is the create event of this room: its author
// and nonce derive the room's ID.
func (r *room) founds(e *Event) bool {
	return e.Kind == KindCreate && len(e.Body) >= roomNonceLen && DeriveRoomID(e.Author, e.Body[:roomNonceLen]) == r.id
}

// store adds a checked event to the batch and to the in-memory state. A
// fork (a seq its author already used here) stays out of the sequence
// index and the version vector.
func (r *room) store(tx *txn, it Item, target peer.ID, fork bool) {
	e, rid := it.Event, string(r.id)
	if e.Kind == KindJoin && e.Author == r.m.self {
		r.joinWait = "" // a join that waited to be stored is the join
	}
	if r.batchEvents == nil {
		r.batchEvents = make(map[ID]*Event)
	}
	r.batchEvents[it.ID] = e
	tx.markEvent()
	author := []byte(e.Author)
	tx.ops = append(tx.ops,
		schema.Op{Key: schema.RoomEvent(rid, it.ID[:]), Val: storedEvent(e.Depth, it.Wire)},
		schema.Op{Key: schema.RoomOrder(rid, e.Depth, it.ID[:])},
	)
	if fork {
		tx.ops = append(tx.ops, schema.Op{Key: schema.RoomFork(rid, author, e.Seq, it.ID[:])})
	} else {
		tx.ops = append(tx.ops, schema.Op{Key: schema.RoomAuthorSeq(rid, author, e.Seq), Val: it.ID[:]})
	}
	r.arrivals++
	tx.ops = append(tx.ops, schema.Op{Key: schema.RoomArrival(rid, r.arrivals), Val: it.ID[:]})
	// The heads and the version vector are written as a tip every
	// tipEvery arrivals (tip.go), not with each event.
	for _, p := range e.Parents {
		delete(r.heads, p)
		delete(r.headTime, p)
	}
	r.heads[it.ID] = e.Depth
	r.headTime[it.ID] = e.Time
	r.recent.put(it.ID, e.Depth)

	if tx.vv == nil {
		tx.vv = make(map[peer.ID]uint64)
	}
	admits := e.Kind != KindInvite || r.invitesIn(e, target)
	named, _ := r.leaveNamed(e) // checked when the event was (checkLeave)
	r.mu.Lock()
	if fork {
		tx.forks++
	} else {
		tx.vv[e.Author] = e.Seq
		r.vv[e.Author] = e.Seq
	}
	r.applyMembership(tx, e, it.ID, target, admits, named)
	if e.Kind == KindCreate { // the create event names the room, whatever an invite said
		r.founded, r.foundedKnown = e.Time, true
		r.meta.Name, r.meta.Purpose = splitCreate(e.Body[roomNonceLen:])
		r.meta.Creator = e.Author
		r.meta.Topic = TopicFor(e.Body[:roomNonceLen])
		if r.meta.Topic != r.topicStr {
			tx.topic = r.meta.Topic
		}
		// A room told back has no record until a catch-up confirms it
		// (retell.go: confirmToldBack writes it then).
		if raw, err := json.Marshal(r.meta); err == nil && r.prov == nil {
			tx.ops = append(tx.ops, schema.Op{Key: schema.RoomIndex(rid), Val: raw})
		}
	}
	r.mu.Unlock()
	tx.accepted = append(tx.accepted, viewOf(it.ID, e))
	tx.arrivals = append(tx.arrivals, r.arrivals)
}

// stamp is the time of this node's event seq with parents: the clock's,
// or just after the newest of its parents and of the node's previous
// event, when that is later, by less than MaxStepBack past the clock (the
// clock stepped back since, or is behind the clocks of the members whose
// events it follows). An event dated further ahead is not followed: a
// member's clock set far ahead would drag this node's along. Its caller
// holds procMu.
func (r *room) stamp(seq uint64, parents []ID) int64 {
	now := r.m.cfg.Now().UnixMilli()
	t := now
	follow := func(prev int64) {
		if prev >= t && prev-now < MaxStepBack.Milliseconds() {
			t = prev + 1
		}
	}
	for _, p := range parents {
		if pt, ok := r.timeOfHead(p); ok {
			follow(pt)
		}
	}
	if seq <= 1 {
		return t
	}
	if r.lastOwnSeq != seq-1 {
		idb, ok, err := r.m.cfg.Store.Lookup(schema.RoomAuthorSeq(string(r.id), []byte(r.m.self), seq-1))
		if err != nil || !ok || len(idb) != len(ID{}) {
			return t
		}
		e, _, err := r.m.readEvent(r.id, ID(idb))
		if err != nil {
			return t
		}
		r.lastOwnSeq, r.lastOwnTime = seq-1, e.Time
	}
	follow(r.lastOwnTime)
	return t
}

// noTime marks a head whose time could not be read (headTime).
const noTime = math.MinInt64

// timeOfHead returns the time of head id: kept since it was stored, or
// read from the store once (heads loaded with the room). Its caller holds
// procMu.
func (r *room) timeOfHead(id ID) (int64, bool) {
	if t, ok := r.headTime[id]; ok {
		return t, t != noTime
	}
	if _, ok := r.heads[id]; !ok {
		return 0, false
	}
	t := int64(noTime)
	if e, _, err := r.m.readEvent(r.id, id); err == nil {
		t = e.Time
	}
	r.headTime[id] = t
	return t, t != noTime
}

// author creates, signs and stores this node's next event.
func (r *room) author(tx *txn, s *sayReq) (ID, error) {
	self := r.m.self
	r.mu.RLock()
	_, member := r.members[self]
	seq := r.vv[self] + 1
	r.mu.RUnlock()
	if !member && s.kind != KindCreate {
		return ID{}, fmt.Errorf("%w: this node is not (yet) a member of room %s", ErrNotMember, r.id)
	}
	e := &Event{
		Room: r.id, Author: self, Agent: s.agent, Seq: seq, Kind: s.kind, Body: s.body,
		ReplyTo: s.replyTo, To: s.to, Depth: 1,
	}
	if s.kind != KindCreate {
		e.Parents, e.Depth = r.pickParents()
	}
	// Dated after the heads it takes as parents.
	e.Time = r.stamp(seq, e.Parents)
	if s.kind != KindCreate {
		var named []ID
		if admit, first := r.firstOf(self); seq == first {
			// The first event of a membership names the event that
			// admitted it: its proof of membership (checkAuthor).
			named = append(named, admit)
		}
		if s.kind == KindInvite {
			// An invite of a node that is out names the leaves that
			// took it out: that makes it a return (invitesIn).
			if p, err := peer.IDFromBytes(s.body); err == nil {
				switch leaves, out := r.leavesOf(p); {
				case len(leaves) > 0:
					named = append(named, leaves...)
				case out:
					if strict, err := r.namesAdmit(); err != nil || strict {
						return ID{}, fmt.Errorf("%w: %s is out of room %s, and the leave that took it out is not known here, which an invite back must name", ErrNotMember, p, r.id)
					}
				}
			}
		}
		e.Parents = r.withParent(e.Parents, named...)
	}
	wire, id, err := Seal(r.m.cfg.Key, e)
	if err != nil {
		return ID{}, err
	}
	var target peer.ID
	if e.Kind == KindInvite {
		target, _ = e.InviteTarget()
	}
	it := &Item{ID: id, Event: e, Wire: wire}
	r.store(tx, *it, target, false)
	tx.own = append(tx.own, it)
	r.lastOwnSeq, r.lastOwnTime = seq, e.Time
	return id, nil
}

// mergeShallow is how many of the shallowest heads an own event takes as
// parents when the heads do not all fit.
const mergeShallow = 4

// pickParents returns up to MaxParents current heads and the new depth:
// the deepest, so the new event lands as late in display order as
// possible, and when there are more heads than fit, also the shallowest
// few (mergeShallow), so that heads left behind (a node's events that
// branched from old ones) are merged in time rather than kept, and sorted
// and sent in every sync, for good.
func (r *room) pickParents() ([]ID, uint64) {
	type hd struct {
		id    ID
		depth uint64
	}
	hs := make([]hd, 0, len(r.heads))
	for id, d := range r.heads {
		hs = append(hs, hd{id, d})
	}
	slices.SortFunc(hs, func(a, b hd) int {
		if a.depth != b.depth {
			if a.depth > b.depth {
				return -1
			}
			return 1
		}
		return a.id.Compare(b.id)
	})
	if len(hs) > MaxParents {
		hs = append(hs[:MaxParents-mergeShallow], hs[len(hs)-mergeShallow:]...)
	}
	parents := make([]ID, len(hs))
	var top uint64
	for i, h := range hs {
		parents[i] = h.id
		top = max(top, h.depth)
	}
	return SortIDs(parents), top + 1
}

// withParent returns parents (sorted, at most MaxParents, all heads) with
// id among them: in place of the shallowest when they are full.
func (r *room) withParent(parents []ID, ids ...ID) []ID {
	for _, id := range ids {
		if slices.Contains(parents, id) {
			continue
		}
		if len(parents) >= MaxParents {
			low := -1
			for i, p := range parents {
				if slices.Contains(ids, p) {
					continue // named: kept
				}
				if low < 0 || r.heads[p] < r.heads[parents[low]] {
					low = i
				}
			}
			parents = slices.Delete(parents, low, low+1)
		}
		parents = append(parents, id)
	}
	return SortIDs(parents)
}

// depthOf returns the depth of a stored event.
func (r *room) depthOf(id ID) (uint64, bool) {
	if d, ok := r.recent.get(id); ok {
		return d, true
	}
	v, ok, err := r.m.cfg.Store.Lookup(schema.RoomEvent(string(r.id), id[:]))
	if err != nil || !ok {
		return 0, false
	}
	d, _, err := splitStored(v)
	if err != nil {
		return 0, false
	}
	r.recent.put(id, d)
	return d, true
}

// storedAlready reports whether event it is stored. An event past its
// author's seq in the version vector cannot be (every stored event, a fork
// too, is at or below it), so a new event costs no store lookup.
func (r *room) storedAlready(it Item) bool {
	if _, ok := r.recent.get(it.ID); ok {
		return true
	}
	if it.Event != nil {
		r.mu.RLock()
		cur := r.vv[it.Event.Author]
		r.mu.RUnlock()
		if it.Event.Seq > cur {
			return false
		}
	}
	_, ok := r.depthOf(it.ID)
	return ok
}

// maxAncestorWalk bounds the search for a new member's invite in rooms
// created before NamedAdmitSince, shortAncestorWalk in rooms created since
// (checkFirst).
const (
	maxAncestorWalk   = 100_000
	shortAncestorWalk = 64
)

// hasAncestor reports whether target is a (stored) ancestor of e, walking
// back no deeper than target's depth and through at most limit events.
func (r *room) hasAncestor(e *Event, target ID, limit int) bool {
	td, ok := r.depthOf(target)
	if !ok {
		return false
	}
	return r.walkPast(e, limit, func(id ID, ev *Event) (bool, bool) {
		return id == target, ev != nil && ev.Depth > td
	})
}

// invitedWithin reports whether an invite of e's author (one returns is
// true for, if not nil) is among e's parents, or among the first limit
// events of e's past that a walk back from them visits. The walk's order follows the signed parents alone, so
// every node visits the same events.
func (r *room) invitedWithin(e *Event, limit int, returns func(*Event) bool) bool {
	invites := func(ev *Event) bool {
		if ev == nil || ev.Kind != KindInvite {
			return false
		}
		t, err := ev.InviteTarget()
		return err == nil && t == e.Author && (returns == nil || returns(ev))
	}
	for _, p := range e.Parents {
		if invites(r.walkedEvent(p)) {
			return true
		}
	}
	return r.walkPast(e, limit, func(_ ID, ev *Event) (bool, bool) {
		return invites(ev), true
	})
}

// walkPast walks back from e's parents, depth first in the order of the
// signed parents, through at most limit events, until visit finds what it
// looks for; visit also says whether to go on to an event's parents. An
// event that cannot be read is visited as nil.
func (r *room) walkPast(e *Event, limit int, visit func(id ID, ev *Event) (found, deeper bool)) bool {
	seen := make(map[ID]bool)
	queue := append(r.ancBuf[:0], e.Parents...)
	found := false
	for len(queue) > 0 && len(seen) < limit && !found {
		id := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		ev := r.walkedEvent(id)
		var deeper bool
		if found, deeper = visit(id, ev); deeper && ev != nil {
			queue = append(queue, ev.Parents...)
		}
	}
	r.ancBuf = queue[:0]
	return found
}

// walkedEvent returns stored event id, or one the batch in process
// stored and has not written yet; nil when it cannot be read.
func (r *room) walkedEvent(id ID) *Event {
	if ev, ok := r.batchEvents[id]; ok {
		return ev
	}
	ev, _, err := r.m.readEvent(r.id, id)
	if err != nil {
		return nil
	}
	return ev
}

// isMember reports whether p is a member node (leaf state; any goroutine).
func (r *room) isMember(p peer.ID) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.members[p]
	return ok
}

// refusesInviter reports whether an invite notice from p is refused: the
// room knows its members and p is not one (a node that left or was
// removed is not). A room opened by an earlier notice whose catch-up has
// not brought the create event yet knows no member: it takes the notice
// from the node that invited it (an inviter may tell it twice: again when
// it reconnects) or from one trusted to invite, which it would catch up
// from (trusted), and no other.
func (r *room) refusesInviter(p peer.ID, trusted bool) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if _, member := r.members[p]; member {
		return false
	}
	if len(r.members) > 0 {
		return true
	}
	return p != r.meta.InvitedBy && !trusted
}

func (r *room) memberList() []peer.ID {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]peer.ID, 0, len(r.members))
	for p := range r.members {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// committedVV returns the version vector of what is in the store.
func (r *room) committedVV() map[peer.ID]uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[peer.ID]uint64, len(r.committed))
	for p, s := range r.committed {
		out[p] = s
	}
	return out
}

// submit hands an input to the room. A live input (an event from gossip,
// a say) that finds the room idle, with nothing queued before it, is
// processed at once on the caller's goroutine: no hand-over to wait for.
// Else it is queued for the room's goroutine, which submit starts if it
// stopped.
func (r *room) submit(ctx context.Context, in input) error {
	if (in.item != nil && !in.catchUp) || in.say != nil {
		if r.inline(in) {
			return nil
		}
	}
	return r.enqueue(ctx, in)
}

// enqueue queues an input for the room's goroutine, starting it if it
// stopped. Only a closed room starts none (goRoom): what is queued there is
// never taken, and whoever waits for an answer (say, barrier, missingIDs)
// returns on r.closed(). A room is never opened again: open builds a new
// one, while a sync or a post under way may still hold the closed one.
func (r *room) enqueue(ctx context.Context, in input) error {
	r.runMu.Lock()
	r.submitting++
	if !r.running {
		r.running = true
		r.goRoom(r.run)
	}
	r.runMu.Unlock()
	defer func() {
		r.runMu.Lock()
		r.submitting--
		r.runMu.Unlock()
	}()
	q := r.inbox
	if in.catchUp || in.barrier != nil || in.missing != nil {
		q = r.bulk
	} else {
		r.queued.Add(1)
	}
	select {
	case q <- in:
		return nil
	case <-ctx.Done():
		return r.unqueue(q, ctx.Err())
	case <-r.closed():
		return r.unqueue(q, ErrClosed)
	case <-r.m.ctx.Done():
		return r.unqueue(q, ErrClosed)
	}
}

// unqueue takes back the count of a live input that was not queued.
func (r *room) unqueue(q chan input, err error) error {
	if q == r.inbox {
		r.queued.Add(-1)
	}
	return err
}

// inline processes in on the caller's goroutine if no live input is queued
// before it and no other batch is being processed; false leaves it to the
// queue.
func (r *room) inline(in input) bool {
	if r.queued.Load() != 0 || !r.procMu.TryLock() {
		return false
	}
	defer r.procMu.Unlock()
	if r.queued.Load() != 0 || !r.enter() {
		return false
	}
	defer r.leave()
	r.lastInline.Store(time.Now().UnixNano())
	r.process(r.ctx, []input{in})
	// The room's goroutine runs while the room is busy, inline or not:
	// once it stops, an idle room drops its recent views.
	r.runMu.Lock()
	if !r.running {
		r.running = true
		r.goRoom(r.run)
	}
	r.runMu.Unlock()
	return true
}

// closed is done once the room closes (nil for a room that never opened).
func (r *room) closed() <-chan struct{} {
	if r.ctx == nil {
		return nil
	}
	return r.ctx.Done()
}

// say authors an event and waits until it is stored durably.
func (r *room) say(ctx context.Context, s *sayReq) (ID, error) {
	if r.provisional() {
		return ID{}, fmt.Errorf("%w: %s", ErrProvisional, r.id)
	}
	if err := r.awaitOwn(ctx); err != nil {
		return ID{}, err
	}
	s.res = make(chan sayRes, 1)
	if err := r.submit(ctx, input{say: s}); err != nil {
		return ID{}, err
	}
	select {
	case res := <-s.res:
		return res.id, res.err
	case <-ctx.Done():
		return ID{}, ctx.Err()
	case <-r.closed():
		select {
		case res := <-s.res:
			return res.id, res.err
		default:
			return ID{}, ErrClosed
		}
	case <-r.m.ctx.Done():
		return ID{}, ErrClosed
	}
}

// barrier waits until everything submitted before it is processed: the
// catch-up inputs, and the live ones queued when it is taken (up to a
// batch's worth, which is all of them unless gossip floods the room).
func (r *room) barrier(ctx context.Context) error {
	ch := make(chan error, 1)
	if err := r.submit(ctx, input{barrier: ch}); err != nil {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-r.closed(): // a closed room answers nothing more
		return ErrClosed
	case <-r.m.ctx.Done():
		return ErrClosed
	}
}

// missingIDs returns the events the pending pool waits for (at most
// MaxWant), as the room's goroutine sees them once everything submitted
// before is processed.
func (r *room) missingIDs(ctx context.Context) ([]ID, error) {
	ch := make(chan []ID, 1)
	if err := r.submit(ctx, input{missing: ch}); err != nil {
		return nil, err
	}
	select {
	case ids := <-ch:
		return ids, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.closed():
		return nil, ErrClosed
	case <-r.m.ctx.Done():
		return nil, ErrClosed
	}
}

// listen registers a listener for newly stored events. The channel is
// closed when the listener falls too far behind or the room stops.
func (r *room) listen(buf int) (<-chan View, func()) {
	ch := make(chan View, buf)
	r.mu.Lock()
	id := r.nextLis
	r.nextLis++
	r.listeners[id] = ch
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		if c, ok := r.listeners[id]; ok {
			delete(r.listeners, id)
			close(c)
		}
		r.mu.Unlock()
	}
}

// deliver hands a written batch's events to the listeners: the events
// this node authored in the batch (said set, once they are durable) or the
// others. The said ones come after the others: no other event of the batch
// can have one of them as a parent (they were not published yet), so the
// order stays causal.
func (r *room) deliver(tx *txn, said bool) {
	vs := make([]View, 0, len(tx.accepted))
	for i := range tx.accepted {
		if tx.saidHere(tx.accepted[i].ID) == said {
			vs = append(vs, tx.accepted[i])
		}
	}
	if len(vs) == 0 {
		return
	}
	r.m.metrics.accepted.Add(float64(len(vs)))
	// The change pulse first: a goroutine woken last runs next on this
	// core (the earlier ones queue behind it), and the listeners waiting
	// for these events matter more than the services that poll on a pulse.
	r.m.changed(r.id)
	r.notify(vs)
}

// sentNotStored is the error of a post whose event id went out but whose
// write or fsync failed with err.
func sentNotStored(id ID, err error) error {
	return fmt.Errorf("%w (event %s): %w", ErrSentNotStored, id, err)
}

// endBatchEvents forgets the batch's events; a map grown by a big batch
// (a released chain) is let go rather than kept at its size by each room.
func (r *room) endBatchEvents() {
	if len(r.batchEvents) > 256 {
		r.batchEvents = nil
		return
	}
	clear(r.batchEvents)
}

// saidHere reports whether the batch authored event id.
func (tx *txn) saidHere(id ID) bool {
	for _, it := range tx.own {
		if it.ID == id {
			return true
		}
	}
	return false
}

func (r *room) notify(vs []View) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, ch := range r.listeners {
		for _, v := range vs {
			select {
			case ch <- v:
				continue
			default:
			}
			// Too slow: cut it off; it can read the log and listen again.
			delete(r.listeners, id)
			close(ch)
			break
		}
	}
}

func (r *room) closeListeners() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, ch := range r.listeners {
		delete(r.listeners, id)
		close(ch)
	}
}

// depthCacheSize is the size of a depth cache's generation. The cache
// spares a store lookup for the parents of a new event and for an event
// that comes again (gossip's retransmissions, within seconds): both are
// among the room's latest events, so the last couple of thousand are
// enough (20 s of a room at 100 events a second), and a miss only costs a
// lookup. Each entry costs about 60 bytes, so a room holds at most
// 2 × 2048 of them (about 0.25 MiB) however long it runs; at 1<<16 a busy
// room grew for hours, to about 8 MiB.
const depthCacheSize = 1 << 11

// depthCache remembers the depth of recently stored events in two
// generations, so it stays bounded without per-entry bookkeeping. The
// room's goroutine fills it; the validators read it too (mu).
type depthCache struct {
	mu       sync.RWMutex // protects cur and old
	cur, old map[ID]uint64
	max      int
}

func newDepthCache(max int) *depthCache {
	return &depthCache{cur: make(map[ID]uint64), old: make(map[ID]uint64), max: max}
}

func (c *depthCache) get(id ID) (uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if d, ok := c.cur[id]; ok {
		return d, true
	}
	d, ok := c.old[id]
	return d, ok
}

func (c *depthCache) put(id ID, d uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cur) >= c.max {
		c.old, c.cur = c.cur, make(map[ID]uint64, c.max/4)
	}
	c.cur[id] = d
}

func (c *depthCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur, c.old = make(map[ID]uint64), make(map[ID]uint64)
}
