package inbox

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/internal/usage"
	"github.com/parley-mesh/parley/rooms"
)

// Rooms is what the inbox needs of the rooms service; *rooms.Manager
// implements it.
type Rooms interface {
	Self() peer.ID
	List() []rooms.Info
	Get(id identity.RoomID) (rooms.Info, error)
	Since(id identity.RoomID, after uint64, limit int) ([]rooms.View, error)
	Log(id identity.RoomID, limit int, before *rooms.ID) ([]rooms.View, error)
	Find(eid rooms.ID) (rooms.View, error)
	EventByPrefix(room identity.RoomID, prefix string) (rooms.ID, error)
	Subscribe(id identity.RoomID, buf int) (<-chan rooms.View, func(), error)
	Changes() (<-chan struct{}, func())
	ChangedSince(after uint64) ([]identity.RoomID, uint64)
	CreateRoom(ctx context.Context, name, purpose string, agent identity.AgentName) (identity.RoomID, error)
	Invite(ctx context.Context, id identity.RoomID, target peer.ID, agent identity.AgentName) (rooms.ID, error)
	InviteAgent(ctx context.Context, id identity.RoomID, target peer.ID, name, by identity.AgentName) (rooms.ID, error)
	// InviteWaits reports whether an invite of target waits on its node
	// for its user's answer (target is not a contact granting invites).
	InviteWaits(target peer.ID) bool
	// CanInvite returns nil when this node may invite node target now, else
	// why not (wrapping rooms.ErrInviteRefused).
	CanInvite(target peer.ID) error
	Say(ctx context.Context, id identity.RoomID, a rooms.SayArgs) (rooms.ID, error)
	Leave(ctx context.Context, id identity.RoomID, agent identity.AgentName) (rooms.ID, error)
	LeaveNode(ctx context.Context, id identity.RoomID, agent identity.AgentName) (rooms.ID, error)
	Remove(ctx context.Context, id identity.RoomID, target peer.ID, by identity.AgentName) (rooms.ID, error)
	RemoveAgent(ctx context.Context, id identity.RoomID, addr identity.AgentAddr, by identity.AgentName) (rooms.ID, error)
	Agents(id identity.RoomID) ([]rooms.AgentMember, error)
	AgentState(id identity.RoomID, addr string) (rooms.AgentMember, bool, error)
	LeftRoom(id identity.RoomID) (name string, left bool)
	// LeftByName returns the rooms of that name this node is out of.
	LeftByName(name string) []identity.RoomID
	// Admission returns the event that admitted this node to the room
	// (its create, or the invite that let it in); ok false if none is
	// stored yet.
	Admission(id identity.RoomID) (v rooms.View, ok bool, err error)
}

var _ Rooms = (*rooms.Manager)(nil)

// Agents is what the inbox needs of the agent service, in the local API's
// terms (the node's localapi.Agents implements it).
type Agents interface {
	List(ctx context.Context) []localapi.AgentInfo
	Who(ctx context.Context) []localapi.WhoEntry
	// Heard reports whether this node holds live presence of node p, a
	// contact: it knows which agents p runs (none, perhaps). Who shows
	// only the agents, so it cannot tell a node that runs none from one
	// this node has not heard.
	Heard(ctx context.Context, p peer.ID) bool
}

// Moderation is what the inbox asks before an agent posts, and before it
// shows an agent an event (internal/moderation, through the node).
type Moderation interface {
	// CheckPost returns an error saying why the agent may not post a
	// message or ask now (a *localapi.Error), or nil; a nil answer counts
	// the post against the agent's limit.
	CheckPost(agent identity.AgentName) error
	// Hidden reports whether the events of the agent at addr (NAME@PEER_ID)
	// are kept from this node's agents.
	Hidden(addr string) bool
}

var (
	_ localapi.Edge  = (*Inbox)(nil)
	_ localapi.Rooms = (*Inbox)(nil)
)

// Config configures an Inbox. Zero values are documented.
type Config struct {
	Rooms  Rooms       // required
	Store  rooms.Store // required; the node's store
	Agents Agents      // required
	// AskTTL is how long an ask is owed (and waited for) unless answered.
	// Zero means DefaultAskTTL.
	AskTTL time.Duration
	// PresenceGrace is how long an ask or invite of a contact's agent that
	// presence does not show is retried before it is refused (presence lags
	// a change by a second or two). Zero means 4 s.
	PresenceGrace time.Duration
	Logger        *slog.Logger     // nil discards
	Now           func() time.Time // nil: time.Now
	// Names resolves the node of an address written NAME@HANDLE (as names
	// show), and names nodes as people read them (in the names of the rooms
	// asks open). Nil: only peer IDs are taken, and nodes are named by the
	// end of their peer IDs.
	Names interface {
		Resolve(name string) (peer.ID, error)
		Name(p peer.ID) string
	}
	// Moderation says whether an agent may post and whose events are kept
	// from this node's agents. Nil: everyone may post, nothing is hidden.
	Moderation Moderation
	// CutOff reports whether the rooms' policy refuses node p: a contact
	// this node's user cut off (revoked, expired, denied), or a node no
	// member it trusts vouched for. A room still stores such a node's
	// events that others built on, so that it stays whole; they are kept
	// from this node's agents as a muted agent's are. Nil: nobody is.
	CutOff func(p peer.ID) bool
	// Audit receives each decision on who is in a room once it is posted:
	// rooms created, members invited and removed, agents and the node
	// leaving. Nil records nothing.
	Audit func(audit.Record)
	// Usage counts the agents' messages, asks and answers; nil counts
	// nothing.
	Usage *usage.Meter
	// Notices are other services' items for an agent (the board's), listed
	// after the replies; with take they are handed out. Nil: none.
	// fits says whether an item of size bytes (text, paths) is within
	// what is left of the take's budget; one it refuses is not listed,
	// nor taken, and comes in a later take.
	Notices func(agent identity.AgentName, take bool, fits func(size int) bool) []localapi.Item
	// HandWait is how long a two-step hand-out (a call made with
	// localapi.TwoStep) waits for its confirmation (Ack) before its items
	// are offered again. Zero means DefaultHandWait.
	HandWait time.Duration
}

// Defaults and limits.
const (
	// DefaultAskTTL is how long an ask is owed by default.
	DefaultAskTTL = time.Hour
	// MaxMessages is the most unread messages one take lists.
	MaxMessages = 10
	// MaxListedText is the longest message a take lists: a longer one
	// stays unread (counted in MoreUnread) for a read, which shows it
	// whole.
	MaxListedText = 2000
	// PendingBudget bounds the texts of one take's items together (asks
	// shown in full, replies, messages): what does not fit waits for the
	// next take (asks, replies) or a read (messages). A take's first item
	// is always given. Agents' clients refuse or cut large tool results.
	PendingBudget = 32 << 10
	// ItemOverhead is what an item (an ask shown in full, a reply) costs
	// of PendingBudget beside its text: its other fields (ID, room, sender,
	// times, the call that answers it) and the notice lines a client shows
	// with it (an ask's: who asks, where, how to answer or dismiss it).
	// An invitation counts its own (invitationSize).
	ItemOverhead = 600
	// MaxReminders is the most reminders (asks shown before, still owed)
	// one take lists, a line each; the others are counted in
	// Pending.OwedLeftOut, and listed as the agent answers these.
	MaxReminders = 20
	// reminderText is what a reminder's text costs of PendingBudget
	// beside ItemOverhead: its client shows a line of about 80
	// characters of the ask.
	reminderText = 80
	// MaxRead is the most events one Read returns.
	MaxRead = 500
	// scanBatch is the most events read at once from a room's arrival log.
	scanBatch = 1000
	// maxScan is the most events one take scans in a room; the rest wait
	// for the next take.
	maxScan = 20 * scanBatch
)

// Inbox serves every local agent's calls and pending items.
type Inbox struct {
	cfg   Config
	rooms Rooms
	db    rooms.Store
	self  peer.ID
	log   *slog.Logger
	now   func() time.Time

	// toldSince is when this database's inbox began to tell the node's
	// user of node invites (invitesToldSince).
	toldSince time.Time

	run string     // names this run of the node in cursors
	mu  sync.Mutex // protects states and each state's refs (each state has its own lock)
	// states are the agents' states in memory, by name; unlock drops the
	// empty ones of names no agent holds.
	states map[identity.AgentName]*state
}

// New returns an inbox; it starts nothing. The first time on a database it
// records when it began to tell node invites (invitesToldSince).
func New(cfg Config) (*Inbox, error) {
	if cfg.Rooms == nil || cfg.Store == nil || cfg.Agents == nil {
		return nil, fmt.Errorf("%w: Rooms, Store and Agents are required", ErrBadConfig)
	}
	if cfg.AskTTL <= 0 {
		cfg.AskTTL = DefaultAskTTL
	}
	if cfg.PresenceGrace <= 0 {
		cfg.PresenceGrace = 4 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HandWait <= 0 {
		cfg.HandWait = DefaultHandWait
	}
	b := &Inbox{cfg: cfg, rooms: cfg.Rooms, db: cfg.Store, self: cfg.Rooms.Self(), log: cfg.Logger, now: cfg.Now,
		run: strings.ToLower(rand.Text()[:8]), states: make(map[identity.AgentName]*state)}
	since, err := b.invitesToldSince()
	if err != nil {
		return nil, err
	}
	b.toldSince = since
	return b, nil
}

// invitesToldSince returns when this database's inbox began to tell the
// node's user of node invites (nodeInvited): stored the first time, by the
// wall clock as rooms.Info.Opened is. A write that fails (a full disk) is
// tried again at the next start; meanwhile this run tells from now.
func (b *Inbox) invitesToldSince() (time.Time, error) {
	v, ok, err := b.db.Lookup(schema.KeyInvitesTold())
	if err != nil {
		return time.Time{}, fmt.Errorf("inbox: open: %w", err)
	}
	if ok && len(v) == 8 {
		return time.Unix(0, int64(beUint(v))).UTC(), nil
	}
	now := time.Now().UTC()
	if err := b.db.Apply([]schema.Op{{Key: schema.KeyInvitesTold(), Val: schema.BE8(uint64(now.UnixNano()))}}, false); err != nil {
		b.log.Warn("inbox: the time node invites are told from is not saved; tried again at the next start", "err", err)
	}
	return now, nil
}

// askRec is an ask an agent owes (o) or asked (q).
type askRec struct {
	Room identity.RoomID `json:"room"`
	From string          `json:"from"`
	// Text is the ask's text, in its record. Memory keeps none (putAsk
	// clears it once the record is written): the text is in the record
	// (and in the room's event), and is read from there when it is needed
	// (askText), so that what other members ask, once per local agent
	// asked, and what the agent asks itself, up to rooms.MaxBody each, do
	// not take the node's memory for as long as the asks are open.
	Text string `json:"text"`
	To   string `json:"to,omitempty"`
	Time int64  `json:"time"`
	// Seen is when this node took the ask in (its own clock; owed asks):
	// an owed ask ends AskTTL after it, so an asker's clock set wrong
	// neither drops it at once nor keeps it for good. 0: from before it
	// was kept, Time counts.
	Seen  int64 `json:"seen,omitempty"`
	Shown bool  `json:"shown,omitempty"` // owed: shown in full once
	// Brought: the asker invited the agent into the room for this ask
	// (the invite just before it, which the ask names: foldInvite); that
	// invitation, Invite, is
	// not shown apart while the ask is to be shown in full, and goes once
	// it was. An ask that ends unshown leaves the invitation to be shown.
	Brought bool   `json:"brought,omitempty"`
	Invite  string `json:"invite,omitempty"`
	// Reply is the first reply to an own ask, once it came. Memory keeps
	// no text of it either (putAsk clears Reply.Text): replyText reads it
	// back.
	Reply *localapi.Item `json:"reply,omitempty"`
}

// since is when an ask's time to live began: when this node took it in,
// if it kept that.
func (a *askRec) since() int64 {
	if a.Seen != 0 {
		return a.Seen
	}
	return a.Time
}

// state is one agent's inbox. Its lock serializes the agent's scans and
// takes; a call that waits does not hold it.
type state struct {
	agent identity.AgentName
	// refs counts the calls that hold the state, or wait for its lock
	// (lock to unlock); under Inbox.mu.
	refs    int
	mu      sync.Mutex // protects the fields below
	loaded  bool
	seen    uint64                     // the rooms' change number scanned up to
	scan    map[identity.RoomID]uint64 // arrival scanned up to (d)
	read    map[identity.RoomID]uint64 // arrival shown up to (r)
	removed map[identity.RoomID]uint64 // depth of the last removal from the room it was told of (x)
	invited map[identity.RoomID]uint64 // human: depth of the last invite of this node it was told of (i)
	owed    map[string]*askRec         // asks it owes, by ID (o)
	asked   map[string]*askRec         // its own asks, by ID (q)
	notes   map[string]*noteRec        // invitations and replies to show once (n)
	sawAsks map[string]int64           // asks it owed, shown or answered by it, since dropped → when (s)
	unread  map[identity.RoomID]int    // unread messages counted by the scan
	// told is, per room a take reported unread messages of (more_unread)
	// and left them unread, the arrival scanned up to then: a Wait with
	// take counts those as new only once the room got more. In memory
	// only: after a restart they are new once again.
	told    map[identity.RoomID]uint64
	recount map[identity.RoomID]bool // rooms whose unread count is not known (after a restart)
	dirty   map[identity.RoomID]bool // rooms with more to scan than one take scans
	hands   map[string]*handRec      // open two-step hand-outs, by token (h)
	news    uint64                   // bumped when a scan finds something new
	ops     []schema.Op              // writes not yet applied
	// wake is closed (poke) when the agent's items change other than by
	// the rooms' changes: items of a hand-out offered again (a partial
	// confirmation, a wait that passed), a new hand-out (its wait to
	// watch). A waiting Wait listens on it (woken); nil when none does.
	wake chan struct{}
}

// woken returns the channel the next poke closes. Callers hold st.mu,
// after they looked at the state: a change made after it closes the
// channel they got.
func (st *state) woken() <-chan struct{} {
	if st.wake == nil {
		st.wake = make(chan struct{})
	}
	return st.wake
}

// poke wakes the calls waiting on the agent's state (woken). Callers hold
// st.mu.
func (st *state) poke() {
	if st.wake != nil {
		close(st.wake)
		st.wake = nil
	}
}

// state returns agent's state, counted as held (refs) until unlock.
func (b *Inbox) state(agent identity.AgentName) *state {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.states[agent]
	if st == nil {
		st = &state{agent: agent}
		b.states[agent] = st
	}
	st.refs++
	return st
}

// hold counts a call that waits as holding agent's state between its
// rounds of lock and unlock, so that the state stays the agent's (unlock
// drops no state held) and the channel the call listens on (woken) stays
// the one a change pokes; release gives it back.
func (b *Inbox) hold(agent identity.AgentName) *state { return b.state(agent) }

// release gives back a state hold returned.
func (b *Inbox) release(st *state) {
	st.mu.Lock()
	b.unlock(st)
}

// lock returns agent's state, locked and loaded from the store; the
// caller gives it back with unlock.
func (b *Inbox) lock(agent identity.AgentName) (*state, error) {
	st := b.state(agent)
	st.mu.Lock()
	if st.loaded {
		return st, nil
	}
	if err := b.load(agent, st); err != nil {
		b.unlock(st)
		return nil, err
	}
	return st, nil
}

// unlock unlocks a state lock returned. A state that no call holds any
// more, that is empty (nothing saved, owed, asked or noted, no room, no
// news), of a name no agent of this node holds, leaves memory: calls for
// names of no agent (a typo, a script going over names) would else keep
// one each for good. The next call for the name starts afresh, as it
// would have (empty, there is nothing to load). A caller counts in refs
// before it locks, so a state with refs at 0 is locked by nobody and can
// change no more once Inbox.mu is held; a waiter locks again on each
// round, and finds a fresh state as good (news stays 0: the state had
// none).
func (b *Inbox) unlock(st *state) {
	idle := st.empty()
	st.mu.Unlock()
	held := idle && b.held(st.agent) // no lock held: it asks the agents service
	b.mu.Lock()
	defer b.mu.Unlock()
	st.refs--
	if !idle || held || st.refs > 0 || b.states[st.agent] != st {
		return
	}
	if !st.mu.TryLock() {
		return // a test's look at it; it goes on a later call
	}
	if st.empty() { // another call may have come and gone meanwhile
		delete(b.states, st.agent)
	}
	st.mu.Unlock()
}

// empty reports whether the state holds nothing but what a fresh one
// would; callers hold st.mu.
func (st *state) empty() bool {
	return st.news == 0 && len(st.ops) == 0 && len(st.scan) == 0 && len(st.read) == 0 && len(st.removed) == 0 && len(st.invited) == 0 &&
		len(st.owed) == 0 && len(st.asked) == 0 && len(st.notes) == 0 && len(st.sawAsks) == 0 &&
		len(st.unread) == 0 && len(st.dirty) == 0 && len(st.recount) == 0 && len(st.hands) == 0
}

// held reports whether an agent of this node holds the name.
func (b *Inbox) held(agent identity.AgentName) bool {
	return b.registered(context.Background(), agent)
}

// load reads an agent's cursors and items. Rooms whose messages were not
// all shown get their unread count again on the next take.
func (b *Inbox) load(agent identity.AgentName, st *state) error {
	st.scan, st.read, st.removed = map[identity.RoomID]uint64{}, map[identity.RoomID]uint64{}, map[identity.RoomID]uint64{}
	st.invited = map[identity.RoomID]uint64{}
	st.owed, st.asked, st.notes = map[string]*askRec{}, map[string]*askRec{}, map[string]*noteRec{}
	st.sawAsks, st.hands = map[string]int64{}, map[string]*handRec{}
	st.unread, st.recount, st.dirty = map[identity.RoomID]int{}, map[identity.RoomID]bool{}, map[identity.RoomID]bool{}
	prefix := schema.AgentPrefix(string(agent))
	var bad error
	err := b.db.ScanFrom(prefix, nil, false, func(k, v []byte) bool {
		kind, key, ok := strings.Cut(string(k[len(prefix):]), "/")
		if !ok {
			return true
		}
		switch kind {
		case "d", "r", "x", "i":
			if len(v) != 8 {
				return true
			}
			n := beUint(v)
			switch kind {
			case "d":
				st.scan[identity.RoomID(key)] = n
			case "r":
				st.read[identity.RoomID(key)] = n
			case "i":
				st.invited[identity.RoomID(key)] = n
			default:
				st.removed[identity.RoomID(key)] = n
			}
		case "o", "q":
			var a askRec
			if err := json.Unmarshal(v, &a); err != nil {
				bad = fmt.Errorf("inbox: %s item %s/%s: %w", agent, kind, key, err)
				return false
			}
			a.forget() // read when needed (askText, replyText)
			if kind == "o" {
				st.owed[key] = &a
			} else {
				st.asked[key] = &a
			}
		case "s":
			if len(v) == 8 {
				st.sawAsks[key] = int64(beUint(v))
			}
		case "n":
			var it localapi.Item
			if err := json.Unmarshal(v, &it); err != nil {
				bad = fmt.Errorf("inbox: %s notice %s: %w", agent, key, err)
				return false
			}
			st.notes[key] = keptNote(it)
		case "h":
			r, err := loadHand(v)
			if err != nil {
				bad = fmt.Errorf("inbox: %s hand-out %s: %w", agent, key, err)
				return false
			}
			st.hands[key] = r
		}
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return fmt.Errorf("inbox: load %s: %w", agent, err)
	}
	for room, d := range st.scan {
		if st.read[room] < d {
			st.recount[room] = true
		}
	}
	st.loaded = true
	return nil
}

// flush applies the state's pending writes. A refused write (a full disk)
// drops them: the caller decides what memory keeps, see keep and discard.
func (b *Inbox) flush(st *state) error {
	if len(st.ops) == 0 {
		return nil
	}
	err := b.db.Apply(st.ops, false)
	st.ops = st.ops[:0]
	if err != nil {
		return fmt.Errorf("inbox: save: %w", err)
	}
	return nil
}

// A call that hands out what it read (take, read, wait, the reply to an
// ask) and cannot save that it did — the disk is full — still answers with
// it: the agent has it, and memory, which marks it handed out, says so
// truly. What was not saved comes back after a restart, which starts from
// the store: an item may then be shown twice, never lost. A call that fails
// before it has handed anything out, or whose point is the write itself
// (dismiss), answers the error and changes nothing: discard puts memory
// back to what the store holds, so that what the call marked is offered
// again once the disk has room.

// keep flushes the state's writes after a call that handed out what it
// read; a refused write is logged, not returned (see above).
func (b *Inbox) keep(st *state) {
	if err := b.flush(st); err != nil {
		b.log.Warn("inbox: what an agent was handed is not saved; it may be handed out again after a restart",
			"agent", string(st.agent), "err", err)
	}
}

// discard drops the state's unsaved changes, in memory too: the next lock
// loads the state from the store again and scans every room from its saved
// cursors, as after a restart. Callers hold st.mu.
func (b *Inbox) discard(st *state) {
	st.ops = st.ops[:0]
	st.loaded = false
	st.seen = 0
}

func (st *state) setCursor(agent identity.AgentName, kind string, room identity.RoomID, n uint64) {
	switch kind {
	case "d":
		st.scan[room] = n
	case "r":
		st.read[room] = n
	case "i":
		st.invited[room] = n
	default:
		st.removed[room] = n
	}
	st.ops = append(st.ops, schema.Op{Key: schema.AgentCursor(string(agent), kind, string(room)), Val: schema.BE8(n)})
}

// putAsk keeps an ask and writes its record, with a.Text and the reply's
// text; memory keeps neither (see askRec.Text): they are cleared once
// written. A caller that writes a record again puts the texts back first
// (askText, replyText).
func (st *state) putAsk(agent identity.AgentName, kind, id string, a *askRec) {
	raw, err := json.Marshal(a)
	a.forget()
	if kind == "o" {
		st.owed[id] = a
	} else {
		st.asked[id] = a
	}
	if err != nil {
		return // plain strings and numbers: cannot fail
	}
	st.ops = append(st.ops, schema.Op{Key: schema.AgentItem(string(agent), kind, id), Val: raw})
}

// forget drops the ask's texts from memory: its own and its reply's.
func (a *askRec) forget() {
	a.Text = ""
	if a.Reply != nil {
		r := *a.Reply // a copy: the caller's item (a note's) keeps its text
		r.Text = ""
		a.Reply = &r
	}
}

// stored returns the value of the state's item kind/id: its record not
// yet written, else the one on disk; nil when neither holds one (a record
// not saved: a full disk).
func (b *Inbox) stored(st *state, kind, id string) []byte {
	key := schema.AgentItem(string(st.agent), kind, id)
	for i := len(st.ops) - 1; i >= 0; i-- {
		if op := st.ops[i]; string(op.Key) == string(key) {
			if op.Delete {
				return nil
			}
			return op.Val
		}
	}
	if raw, ok, err := b.db.Lookup(key); err == nil && ok {
		return raw
	}
	return nil
}

// eventText is the text of event id as an item made from it shows it,
// read from the room's log; ok false when this node no longer holds it.
func (b *Inbox) eventText(id string) (string, bool) {
	eid, err := rooms.ParseID(id)
	if err != nil {
		return "", false
	}
	v, err := b.rooms.Find(eid)
	if err != nil {
		return "", false
	}
	return item(v, "").Text, true
}

// askText is the text of ask id of the agent's (kind "o": owed, "q": its
// own): from its record not yet written, or on disk, or (a record not
// saved: a full disk) from the room's event.
func (b *Inbox) askText(st *state, kind, id string) string {
	var a askRec
	if raw := b.stored(st, kind, id); raw != nil && json.Unmarshal(raw, &a) == nil && a.Text != "" {
		return a.Text
	}
	if t, ok := b.eventText(id); ok {
		return t
	}
	return "(the text of this ask is no longer on this node)"
}

// replyText is the text of the reply to the agent's own ask id (a.Reply):
// from the ask's record, or from the reply's event.
func (b *Inbox) replyText(st *state, id string, a *askRec) string {
	var rec askRec
	if raw := b.stored(st, "q", id); raw != nil && json.Unmarshal(raw, &rec) == nil &&
		rec.Reply != nil && rec.Reply.ID == a.Reply.ID && rec.Reply.Text != "" {
		return rec.Reply.Text
	}
	if t, ok := b.eventText(a.Reply.ID); ok {
		return t
	}
	return "(the text of this reply is no longer on this node)"
}

// reply returns the first reply to the agent's own ask id, text and all;
// nil when none came.
func (b *Inbox) reply(st *state, id string, a *askRec) *localapi.Item {
	if a.Reply == nil {
		return nil
	}
	r := *a.Reply
	r.Text = b.replyText(st, id, a)
	return &r
}

func (st *state) dropAsk(agent identity.AgentName, kind, id string) {
	if kind == "o" {
		if a := st.owed[id]; a != nil && a.Shown {
			st.sawAsk(agent, id)
		}
		delete(st.owed, id)
	} else {
		delete(st.asked, id)
	}
	st.ops = append(st.ops, schema.Op{Key: schema.AgentItem(string(agent), kind, id), Delete: true})
}

// seenKeep is how long an ask the agent owed and saw is remembered once
// dropped: parley_read does not list it as unread again within it.
const seenKeep = 7 * 24 * time.Hour

// sawAsk remembers that the agent saw ask id (shown in full, or answered
// by it), so that parley_read does not list it as unread once it is no
// longer owed; entries past seenKeep go.
func (st *state) sawAsk(agent identity.AgentName, id string) {
	now := time.Now().UnixMilli()
	for k, at := range st.sawAsks {
		if now-at > seenKeep.Milliseconds() {
			delete(st.sawAsks, k)
			st.ops = append(st.ops, schema.Op{Key: schema.AgentItem(string(agent), "s", k), Delete: true})
		}
	}
	if st.sawAsks == nil {
		st.sawAsks = map[string]int64{}
	}
	st.sawAsks[id] = now
	st.ops = append(st.ops, schema.Op{Key: schema.AgentItem(string(agent), "s", id), Val: schema.BE8(uint64(now))})
}

// noteRec is an item to show the agent once (n): an invitation, a reply to
// its ask, a removal, an item of a hand-out offered again. Of an item made
// from an event (a reply, a message offered again: up to rooms.MaxBody
// each, kept until the agent takes them, restarts included) memory keeps
// no text, only its length (size): the text is in the note's record (and
// in the room's event), and is read from there when it is shown
// (noteItem). Another item (a board notice offered again) keeps its text.
type noteRec struct {
	localapi.Item
	size int // the text's length, kept or not
}

// keptNote is item it as memory keeps it (see noteRec).
func keptNote(it localapi.Item) *noteRec {
	n := &noteRec{Item: it, size: len(it.Text)}
	if _, err := rooms.ParseID(it.ID); err == nil && slices.Contains(eventKinds, it.Kind) {
		n.Text = ""
	}
	return n
}

// noteItem is note n as shown, text and all: kept, or read from the
// note's record not yet written, or on disk, or (a record not saved: a
// full disk) from the room's event.
func (b *Inbox) noteItem(st *state, n *noteRec) localapi.Item {
	it := n.Item
	if it.Text != "" || n.size == 0 {
		return it
	}
	var rec localapi.Item
	if raw := b.stored(st, "n", it.ID); raw != nil && json.Unmarshal(raw, &rec) == nil && rec.Text != "" {
		it.Text = rec.Text
	} else if t, ok := b.eventText(it.ID); ok {
		it.Text = t
	} else {
		it.Text = "(the text of this item is no longer on this node)"
	}
	return it
}

func (st *state) putNote(agent identity.AgentName, it localapi.Item) {
	st.notes[it.ID] = keptNote(it)
	raw, err := json.Marshal(it)
	if err != nil {
		return // plain strings and numbers: cannot fail
	}
	st.ops = append(st.ops, schema.Op{Key: schema.AgentItem(string(agent), "n", it.ID), Val: raw})
	st.news++
}

// dropOwedIn drops the asks the agent owes in a room.
func (st *state) dropOwedIn(agent identity.AgentName, room identity.RoomID) {
	for id, a := range st.owed {
		if a.Room == room {
			st.dropAsk(agent, "o", id)
		}
	}
}

// dropInvitationsTo drops the invitations to a room the agent is out of
// (removed, left, or its node left): they are no longer true.
func (st *state) dropInvitationsTo(agent identity.AgentName, room identity.RoomID) {
	for id, it := range st.notes {
		if it.Kind == "invitation" && it.Room == string(room) {
			st.dropNote(agent, id)
		}
	}
}

func (st *state) dropNote(agent identity.AgentName, id string) {
	delete(st.notes, id)
	st.ops = append(st.ops, schema.Op{Key: schema.AgentItem(string(agent), "n", id), Delete: true})
}

func beUint(v []byte) uint64 {
	var n uint64
	for _, c := range v {
		n = n<<8 | uint64(c)
	}
	return n
}

// parseAgent checks the agent name of a call.
func parseAgent(s string) (identity.AgentName, error) {
	a, err := identity.ParseGivenAgentName(s)
	if err != nil {
		return "", localapi.Errorf(http.StatusBadRequest, localapi.CodeBadRequest, "%v", err)
	}
	return a, nil
}

// addr is an agent's address on this node.
func (b *Inbox) addr(agent identity.AgentName) string { return string(agent) + "@" + b.self.String() }

// from formats an event's sender.
func from(v rooms.View) string { return string(v.Agent) + "@" + v.Author.String() }

// record hands a decision about a room to the audit log.
func (b *Inbox) record(actor identity.AgentName, action string, room identity.RoomID, detail map[string]string) {
	if b.cfg.Audit == nil {
		return
	}
	b.cfg.Audit(audit.Record{Actor: string(actor), Action: action, Subject: string(room), Detail: detail})
}
