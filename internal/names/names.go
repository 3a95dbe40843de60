package names

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/frame"
	"github.com/parley-mesh/parley/internal/lookalike"
	"github.com/parley-mesh/parley/internal/serving"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Protocol is the stream protocol on which a node hands out its node card.
const Protocol protocol.ID = "/parley/name/1"

// PushProtocol is the stream protocol on which a node hands its new card to
// the peers that keep it, when its card changed (a membership taken or
// lost).
const PushProtocol protocol.ID = "/parley/name-push/1"

// Limits.
const (
	// RefetchAfter is how long a peer's card is not asked for again.
	RefetchAfter = 10 * time.Minute
	// fetchTimeout bounds one exchange.
	fetchTimeout = 10 * time.Second
	// fetchWorkers is how many fetches run at once.
	fetchWorkers = 4
	// queueLen bounds the peers waiting to be asked; more are dropped
	// (asked on their next connection).
	queueLen = 256
	// MaxNames bounds the cards kept; past it, the cards of other peers are
	// not kept.
	MaxNames = 10000
	// MaxRequesterCards bounds the cards of peers asking to be contacts,
	// kept in memory only (see Config.Requesters).
	MaxRequesterCards = 256
	// minSuffix is the shortest tail of a peer ID shown after '~'.
	minSuffix = 4
	// recheck is how often connected peers without a card are looked at
	// again (they may have become wanted), and this node's card is sealed
	// again if its membership changed.
	recheck = 2 * time.Second
	// PushEvery is how often one peer's pushed card is taken; pushes that
	// come sooner are refused.
	PushEvery = 5 * time.Second
	// pushWorkers is how many pushes of this node's card run at once.
	pushWorkers = 8
	// pushTries bounds the pushes of one card to one peer; past them the
	// peer fetches the card when it next asks (RefetchAfter).
	pushTries = 8
	// pushBackoffMax bounds the wait between two pushes to one peer.
	pushBackoffMax = 2 * time.Minute
)

var (
	// ErrUnknown is returned by Resolve for a name no known node has.
	ErrUnknown = errors.New("names: no node has this handle")
	// ErrAmbiguous is what Resolve's error is, for a name that reads like
	// the handles of several nodes or of one shown with its tail; the
	// error's text names the nodes it may stand for.
	ErrAmbiguous = errors.New("names: the name does not tell one node")
	// ErrBadConfig is returned by New for a missing required field.
	ErrBadConfig = errors.New("names: bad config")
)

// Store is what the service needs of the node's store.
type Store interface {
	Lookup(key []byte) ([]byte, bool, error)
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
	Apply(ops []schema.Op, durable bool) error
}

// Config configures a Service.
type Config struct {
	Host   host.Host      // required
	Key    crypto.PrivKey // required: the node's key, which signs its card
	Handle string         // the user's handle; empty: the node has no card
	Store  Store          // nil keeps cards in memory only
	// Hints are handles known without a card (contacts' requests); nil: none.
	Hints func() map[peer.ID]string
	// Wanted lists the peers whose cards are asked for and kept (contacts,
	// members of the node's rooms): a stranger that connects cannot fill the
	// store or crowd the names. Nil: every peer's.
	Wanted func() []peer.ID
	// Contacts lists the wanted peers that are this node's contacts (or
	// that it asked to be): they keep their bare handles against room
	// members whose handles read the same. Nil: every wanted peer ranks
	// alike.
	Contacts func() []peer.ID
	// Requesters lists peers asking to be contacts: their cards are asked
	// for so the user sees who asks, and kept in memory only, at most
	// MaxRequesterCards of them, while they ask. A stranger with a fresh key
	// can ask, so their cards go neither to the store nor into MaxNames. A
	// requester that becomes wanted has its card kept. Nil: none.
	Requesters func() []peer.ID
	// Member returns this node's membership certificate of its
	// organisation (a sealed record), shown on its card; nil: none.
	Member func() []byte
	// CheckMember checks the membership certificate on p's card and says
	// what it certifies; a card whose certificate does not hold is kept
	// without it. Nil: certificates on cards are not shown.
	CheckMember func(p peer.ID, wire []byte) (Membership, error)
	Logger      *slog.Logger     // nil discards
	Now         func() time.Time // nil: time.Now
}

// Membership is what a node's checked membership certificate says.
type Membership struct {
	Org   peer.ID // the organisation
	Name  string  // the organisation's name
	Until time.Time
}

// Service learns and shows node names.
type Service struct {
	cfg  Config
	self peer.ID
	log  *slog.Logger

	ownMu     sync.Mutex // protects own, ownMember, ownSeq
	own       []byte     // this node's sealed card, nil without a handle
	ownMember []byte     // the certificate own shows
	ownSeq    uint64
	// handed is this node's card as last handed to its peers (stored at
	// schema.KeyOwnCard), read by New: Run pushes the card when it differs.
	handed []byte

	queue chan peer.ID
	// listsChanged wakes the service's loop to ask Wanted, Contacts and
	// Requesters again at once (ListsChanged).
	listsChanged chan struct{}
	// listsSeq counts ListsChanged's calls.
	listsSeq atomic.Uint64

	mu       sync.Mutex // protects cards, passing, members, asked, table, gen, wanted, contacts, asking and wantedAt
	cards    map[peer.ID]*discovery.NodeCard
	passing  map[peer.ID]passingCard // requesters' cards, in memory only
	members  map[peer.ID]Membership  // checked certificates of cards
	wanted   map[peer.ID]bool        // Wanted's answer at wantedAt
	contacts map[peer.ID]bool        // Contacts' answer at wantedAt
	asking   map[peer.ID]bool        // Requesters' answer at wantedAt
	wantedAt time.Time
	asked    map[peer.ID]askMark
	table    *table              // display names, rebuilt when stale
	gen      uint64              // counts the changes of cards: a table of an older gen is stale
	buildMu  sync.Mutex          // one build of the table at a time; protects keys
	keys     map[string][]string // the lookalike keys of the handles of the last table
	// Under mu too: listsTicket counts the reads of the lists begun
	// (refreshLists); listsKept is the ticket of the answer held, so an
	// answer read before another never replaces it. listsSeqKept is the
	// listsSeq the held answer was read at: one below listsSeq is stale.
	listsTicket, listsKept, listsSeqKept uint64

	pushMu   sync.Mutex            // protects pushedAt, refetch, unpushed, owed, owedDone and refusePushes
	pushedAt map[peer.ID]time.Time // when each peer's last push was taken
	refetch  map[peer.ID]bool      // peers asked for their card once a refused push's wait is over
	// unpushed holds the peers this node's current card is still to be
	// pushed to: every kept peer when the card changes, and those a push
	// failed for, tried again with a growing wait.
	unpushed map[peer.ID]pushDue
	// owed is this node's card, due to every peer that keeps it (nil:
	// none): pushed to those connected when the card changed, and to the
	// others when they connect; owedDone holds the peers that took it.
	owed         []byte
	owedDone     map[peer.ID]bool
	pushing      atomic.Bool // a round of pushes runs
	refusePushes int         // tests: pushes to refuse still
	refused      int         // tests: pushes refused so far
	handlerMu    sync.Mutex  // protects stopped, and handlers' Add against its Wait
	stopped      bool
	handlers     sync.WaitGroup
}

// askMark is when a peer was last asked for its card.
type askMark struct {
	at     time.Time
	failed bool // no card came: asked again when the peer connects or starts serving Protocol
}

// pushDue is when this node's card is next pushed to a peer, and how many
// pushes of it failed.
type pushDue struct {
	at    time.Time
	tries int
	card  []byte // the card it is due for
}

// passingCard is a requester's card and the bytes it came in.
type passingCard struct {
	card *discovery.NodeCard
	wire []byte
}

// table is the display names of every known node at one time.
type table struct {
	built  time.Time
	gen    uint64 // Service.gen when built
	n      int    // cards when built
	name   map[peer.ID]string
	handle map[peer.ID]string
	// byKey holds the nodes whose handles have each key (lookalike.Keys):
	// the nodes of one key read the same.
	byKey map[string][]peer.ID
	// group holds, for each node, the nodes whose handles read the same as
	// its own, through a chain of shared keys (itself included): the nodes
	// of a key are all of one group.
	group map[peer.ID][]peer.ID
	// byName is each node's display name, lower-cased, → the node.
	byName map[string][]peer.ID
	// keys is the keys of each handle (lookalike.Keys).
	keys map[string][]string
	// likeSelf holds the other nodes whose handles read as this node's,
	// or as a word that stands for it.
	likeSelf map[peer.ID]bool
	// rank is how far this node trusts each node (rankSelf … rankNone).
	rank map[peer.ID]int
	// why says, for each node shown with its tail, why it has one.
	why map[peer.ID]string
	// ranked is set when contacts rank above room members (Config.Contacts).
	ranked bool
	// held finds the keys of this node's handle, of the words that stand
	// for it and of trusted nodes' handles in a key with more around them;
	// selfKeys is the keys of the first two.
	held     *lookalike.Index
	selfKeys map[string]bool
}

// New loads the stored cards and seals this node's own; it starts nothing.
func New(cfg Config) (*Service, error) {
	if cfg.Host == nil || cfg.Key == nil {
		return nil, fmt.Errorf("%w: Host and Key are required", ErrBadConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	self, err := peer.IDFromPrivateKey(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("names: %w", err)
	}
	s := &Service{cfg: cfg, self: self, log: cfg.Logger, queue: make(chan peer.ID, queueLen), listsChanged: make(chan struct{}, 1),
		cards: make(map[peer.ID]*discovery.NodeCard), passing: make(map[peer.ID]passingCard), members: make(map[peer.ID]Membership),
		asked: make(map[peer.ID]askMark), pushedAt: make(map[peer.ID]time.Time), refetch: make(map[peer.ID]bool),
		unpushed: make(map[peer.ID]pushDue), owedDone: make(map[peer.ID]bool)}
	if err := s.loadHanded(); err != nil {
		return nil, err
	}
	if cfg.Handle != "" {
		if _, err := s.ownCard(); err != nil {
			return nil, err
		}
	}
	if cfg.Store != nil {
		// Cards are kept in pieces (schema.SetPieces); an older Parley's
		// whole cards read as they are.
		j := schema.NewJoiner(schema.NodeCardPrefix())
		err := cfg.Store.ScanFrom(schema.NodeCardPrefix(), nil, false, func(k, v []byte) bool {
			j.Add(k, v)
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("names: load cards: %w", err)
		}
		stored, damaged := j.Done()
		for _, err := range damaged {
			s.log.Warn("a stored node card is damaged; it is asked for again", "err", err)
		}
		for _, r := range stored {
			c, err := discovery.DecodeNodeCard(r.Val)
			if err != nil {
				s.log.Warn("a stored node card does not decode; it is asked for again", "key", fmt.Sprintf("%q", r.Key), "err", err)
				continue
			}
			if c.Peer != self && len(s.cards) < MaxNames {
				s.cards[c.Peer] = c
				s.checkMember(c)
			}
		}
	}
	return s, nil
}

// loadHanded reads this node's card as last handed to its peers (Run
// pushes the card when it says something else). The card the node starts
// with is sealed afresh all the same, dated now: a home restored from an
// older copy would otherwise show a card older than one its peers hold.
func (s *Service) loadHanded() error {
	if s.cfg.Store == nil {
		return nil
	}
	wire, ok, err := s.cfg.Store.Lookup(schema.KeyOwnCard())
	if err != nil {
		return fmt.Errorf("names: load this node's card: %w", err)
	}
	if !ok {
		return nil
	}
	c, err := discovery.DecodeNodeCard(wire)
	if err != nil || c.Peer != s.self {
		s.log.Warn("this node's stored card is not its own; its card is pushed to its peers again", "err", err)
		return nil
	}
	s.handed, s.ownSeq = wire, c.Seq
	return nil
}

// handedLately reports whether the card stored as handed out was sealed
// (its seq is the clock's, in ms) within RefetchAfter, with some margin.
func (s *Service) handedLately() bool {
	if s.handed == nil {
		return false
	}
	c, err := discovery.DecodeNodeCard(s.handed)
	if err != nil {
		return false
	}
	age := s.cfg.Now().UnixMilli() - int64(c.Seq)
	return age < 2*RefetchAfter.Milliseconds()
}

// sameCard reports whether two of this node's sealed cards say the same:
// the same handle and membership certificate, whatever their seq.
func sameCard(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ca, errA := discovery.DecodeNodeCard(a)
	cb, errB := discovery.DecodeNodeCard(b)
	return errA == nil && errB == nil && ca.Handle == cb.Handle && bytes.Equal(ca.Member, cb.Member)
}

// Run serves Protocol and asks connecting peers for their cards until ctx
// ends.
func (s *Service) Run(ctx context.Context) error {
	h := s.cfg.Host
	// A peer that connected while its name service was starting refused
	// the fetch of its card and the push of this node's: both go again
	// once it serves their protocols.
	watchFetch, err := serving.Watch(ctx, h, Protocol, func(p peer.ID) { s.enqueue(p, true) })
	if err != nil {
		return fmt.Errorf("names: %w", err)
	}
	watchPush, err := serving.Watch(ctx, h, PushProtocol, s.pushDueNow)
	if err != nil {
		return fmt.Errorf("names: %w", err)
	}
	h.SetStreamHandler(Protocol, s.counted(s.serve))
	h.SetStreamHandler(PushProtocol, s.counted(s.takePush))
	// The card last handed to peers (before a restart too): a card that
	// differs is pushed to them. Without a store nothing is known of what
	// they were handed: they fetch the card this node starts with.
	pushed := s.handed
	if s.cfg.Store == nil {
		pushed, _ = s.ownCard()
	}
	changed := func() {
		if own, err := s.ownCard(); err == nil && own != nil && !sameCard(own, pushed) {
			pushed = own
			s.pushToAll(own)
		}
	}
	notif := &network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		s.enqueue(c.RemotePeer(), true)
		s.pushDueNow(c.RemotePeer())
	}}
	h.Network().Notify(notif)
	changed()
	if own, err := s.ownCard(); err == nil && own != nil && bytes.Equal(pushed, s.handed) && s.handedLately() {
		// A card handed out within RefetchAfter before this start may not
		// have reached a peer that was away then: one back soon after it
		// last asked does not ask again, so the card is owed again (a peer
		// back later asks by itself).
		pushed = own
		s.pushToAll(own)
	}
	for _, p := range h.Network().Peers() {
		s.enqueue(p, true)
	}
	fetchUnkept := func() { // connected peers whose card is not kept
		for _, p := range h.Network().Peers() {
			if !s.kept(p) {
				s.enqueue(p, false)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		watchFetch()
	}()
	go func() {
		defer wg.Done()
		watchPush()
	}()
	wg.Add(1)
	go func() { // peers become wanted while connected (a room invite)
		defer wg.Done()
		t := time.NewTicker(recheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.listsChanged:
				s.tidyPassing() // asks the lists again (listsSeq moved)
				fetchUnkept()
			case <-t.C:
				changed()
				if due := s.duePushes(); len(due) > 0 && s.pushing.CompareAndSwap(false, true) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer s.pushing.Store(false)
						s.pushRound(ctx, due)
					}()
				}
				s.tidyPassing()
				fetchUnkept()
			}
		}
	}()
	for range fetchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-s.queue:
					s.fetch(ctx, p)
				}
			}
		}()
	}
	<-ctx.Done()
	h.Network().StopNotify(notif)
	h.RemoveStreamHandler(Protocol)
	h.RemoveStreamHandler(PushProtocol)
	wg.Wait()
	s.handlerMu.Lock()
	s.stopped = true
	s.handlerMu.Unlock()
	s.handlers.Wait()
	return nil
}

// counted runs a stream handler counted in s.handlers, which Run waits
// for; a stream that comes once Run is stopping is reset.
func (s *Service) counted(fn network.StreamHandler) network.StreamHandler {
	return func(st network.Stream) {
		s.handlerMu.Lock()
		if s.stopped {
			s.handlerMu.Unlock()
			_ = st.Reset()
			return
		}
		s.handlers.Add(1)
		s.handlerMu.Unlock()
		defer s.handlers.Done()
		fn(st)
	}
}

// enqueue asks p for its card unless it was asked lately (within
// RefetchAfter), or, when p just connected or started serving Protocol
// (fresh), unless it was asked lately and answered.
func (s *Service) enqueue(p peer.ID, fresh bool) {
	if p == s.self || s.wants(p) == wantNone {
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	if m, ok := s.asked[p]; ok && now.Sub(m.at) < RefetchAfter && !(fresh && m.failed) {
		s.mu.Unlock()
		return
	}
	s.asked[p] = askMark{at: now}
	if len(s.asked) > 2*MaxNames {
		for q, m := range s.asked {
			if now.Sub(m.at) >= RefetchAfter {
				delete(s.asked, q)
			}
		}
	}
	s.mu.Unlock()
	select {
	case s.queue <- p:
	default: // busy: asked again on its next connection
		s.mu.Lock()
		delete(s.asked, p)
		s.mu.Unlock()
	}
}

// ownCard returns this node's sealed card, sealed again (with a higher
// seq) when its membership certificate changed.
func (s *Service) ownCard() ([]byte, error) {
	if s.cfg.Handle == "" {
		return nil, nil
	}
	var member []byte
	if s.cfg.Member != nil {
		member = s.cfg.Member()
	}
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	if s.own != nil && bytes.Equal(member, s.ownMember) {
		return s.own, nil
	}
	seq := max(uint64(s.cfg.Now().UnixMilli()), s.ownSeq+1)
	c := &discovery.NodeCard{Peer: s.self, Handle: s.cfg.Handle, Seq: seq, Member: member}
	w, err := discovery.SealNodeCard(s.cfg.Key, c)
	if err != nil {
		return nil, fmt.Errorf("names: this node's card (handle %q): %w", s.cfg.Handle, err)
	}
	s.own, s.ownMember, s.ownSeq = w, member, seq
	s.mu.Lock()
	s.cards[s.self] = c
	s.checkMember(c)
	s.gen++
	s.mu.Unlock()
	return w, nil
}

// checkMember keeps what c's membership certificate certifies, if it
// holds. s.mu is held.
func (s *Service) checkMember(c *discovery.NodeCard) {
	delete(s.members, c.Peer)
	if len(c.Member) == 0 || s.cfg.CheckMember == nil {
		return
	}
	m, err := s.cfg.CheckMember(c.Peer, c.Member)
	if err != nil {
		s.log.Info("a node card's membership certificate is not shown", "peer", c.Peer.String(), "err", err)
		return
	}
	s.members[c.Peer] = m
}

// serve writes this node's card.
func (s *Service) serve(st network.Stream) {
	defer st.Close()
	own, err := s.ownCard()
	if err != nil {
		s.log.Warn("this node's card", "err", err)
	}
	if own == nil {
		_ = st.Reset()
		return
	}
	_ = st.SetDeadline(time.Now().Add(fetchTimeout))
	if err := frame.Write(st, own); err != nil {
		_ = st.Reset()
	}
}

// pushToAll makes own, this node's new card, due to every peer that keeps
// it (contacts and room members): now for those connected, and for the
// others when they connect (pushDueNow); pushes of an older card still due
// are dropped. The card is stored as the one handed to peers.
func (s *Service) pushToAll(own []byte) {
	if s.cfg.Store != nil {
		// Not durable: a card lost with a crash is pushed again.
		if err := s.cfg.Store.Apply([]schema.Op{{Key: schema.KeyOwnCard(), Val: own}}, false); err != nil {
			s.log.Warn("this node's card not stored; it is pushed to its peers again at the next start", "err", err)
		}
	}
	now := s.cfg.Now()
	var kept []peer.ID
	for _, p := range s.cfg.Host.Network().Peers() {
		if s.wants(p) == wantKept {
			kept = append(kept, p)
		}
	}
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	clear(s.unpushed)
	s.owed = own
	clear(s.owedDone)
	for _, p := range kept {
		s.unpushed[p] = pushDue{at: now, card: own}
	}
}

// pushDueNow makes a push still due to p due at once, and the card owed to
// every peer that keeps it due to p if p did not take it yet: p just
// connected, or started serving PushProtocol.
func (s *Service) pushDueNow(p peer.ID) {
	s.pushMu.Lock()
	if d, ok := s.unpushed[p]; ok {
		d.at = time.Time{}
		s.unpushed[p] = d
		s.pushMu.Unlock()
		return
	}
	owed := s.owed != nil && !s.owedDone[p]
	s.pushMu.Unlock()
	if !owed || s.wants(p) != wantKept {
		return
	}
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	if _, ok := s.unpushed[p]; !ok && s.owed != nil && !s.owedDone[p] {
		s.unpushed[p] = pushDue{card: s.owed}
	}
}

// duePushes returns the peers whose push is due now and who are
// connected; a peer that no longer keeps this node's card is dropped.
func (s *Service) duePushes() map[peer.ID][]byte {
	now := s.cfg.Now()
	s.pushMu.Lock()
	var due map[peer.ID][]byte
	for p, d := range s.unpushed {
		if now.Before(d.at) || s.cfg.Host.Network().Connectedness(p) != network.Connected {
			continue
		}
		if due == nil {
			due = make(map[peer.ID][]byte)
		}
		due[p] = d.card
	}
	s.pushMu.Unlock()
	for p, card := range due {
		if s.wants(p) != wantKept {
			delete(due, p)
			s.pushed(p, card, errNotKept)
		}
	}
	return due
}

// pushRound pushes each due peer its card, pushWorkers at a time (a slow
// peer holds up no other). A push that fails is tried again after a wait
// that doubles from PushEvery, up to pushTries times.
func (s *Service) pushRound(ctx context.Context, due map[peer.ID][]byte) {
	sem := make(chan struct{}, pushWorkers)
	var wg sync.WaitGroup
	for p, card := range due {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := s.push(ctx, p, card)
			s.pushed(p, card, err)
		}()
	}
	wg.Wait()
}

// errNotKept is why a card is not pushed to a peer that no longer keeps it.
var errNotKept = errors.New("names: the peer no longer keeps this node's card")

// pushed records how a push of card to p went.
func (s *Service) pushed(p peer.ID, card []byte, err error) {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	d, ok := s.unpushed[p]
	if !ok || !bytes.Equal(d.card, card) {
		return // a newer card is due instead
	}
	if err == nil || errors.Is(err, errNotKept) {
		if bytes.Equal(card, s.owed) {
			s.owedDone[p] = true
		}
	}
	if err == nil {
		delete(s.unpushed, p)
		return
	}
	d.tries++
	if d.tries >= pushTries || errors.Is(err, errNotKept) {
		// Given up: p is pushed the card again when it next connects.
		delete(s.unpushed, p)
		s.log.Debug("node card not pushed; the peer fetches it when it next asks", "peer", p.String(), "tries", d.tries, "err", err)
		return
	}
	d.at = s.cfg.Now().Add(min(PushEvery<<(d.tries-1), pushBackoffMax))
	s.unpushed[p] = d
	s.log.Debug("node card not pushed; trying again", "peer", p.String(), "tries", d.tries, "err", err)
}

// push hands own to p and waits until p took it: p closes the stream once
// it did, and resets it when it refuses the card (too soon after the
// last).
func (s *Service) push(ctx context.Context, p peer.ID, own []byte) error {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	st, err := s.cfg.Host.NewStream(overRelay(ctx), p, PushProtocol)
	if err != nil {
		return err
	}
	_ = st.SetDeadline(time.Now().Add(fetchTimeout))
	if err := frame.Write(st, own); err != nil {
		_ = st.Reset()
		return err
	}
	if err := st.CloseWrite(); err != nil {
		_ = st.Reset()
		return err
	}
	var b [1]byte
	if _, err := st.Read(b[:]); !errors.Is(err, io.EOF) {
		_ = st.Reset()
		if err == nil {
			err = errors.New("names: the peer answered a push with bytes")
		}
		return fmt.Errorf("names: push not taken: %w", err)
	}
	return st.Close()
}

// takePush reads a card a peer pushed: taken as a fetched one is (the
// peer's own, newer, from a peer this node keeps cards of), at most once
// in PushEvery from one peer.
func (s *Service) takePush(st network.Stream) {
	p := st.Conn().RemotePeer()
	if s.wants(p) != wantKept {
		_ = st.Reset()
		return
	}
	now := s.cfg.Now()
	s.pushMu.Lock()
	if s.refusePushes > 0 {
		s.refusePushes--
		s.refused++
		s.pushMu.Unlock()
		_ = st.Reset()
		return
	}
	last, ok := s.pushedAt[p]
	soon := ok && now.Sub(last) < PushEvery
	later := soon && !s.refetch[p]
	if later {
		s.refetch[p] = true
	}
	if !soon {
		s.pushedAt[p] = now
		if len(s.pushedAt) > MaxNames {
			for q, t := range s.pushedAt {
				if now.Sub(t) >= PushEvery {
					delete(s.pushedAt, q)
				}
			}
		}
	}
	s.pushMu.Unlock()
	if soon {
		_ = st.Reset()
		if later {
			// The card changed again since the last push taken: ask
			// for it once PushEvery has passed, so the newest shows.
			time.AfterFunc(PushEvery, func() {
				s.pushMu.Lock()
				delete(s.refetch, p)
				s.pushMu.Unlock()
				s.mu.Lock()
				delete(s.asked, p)
				s.mu.Unlock()
				s.enqueue(p, false)
			})
		}
		return
	}
	s.readCard(st, p, "pushed")
	_ = st.Close() // after Learn: the pusher reads the close once the card is taken
}

// readCard reads one card p writes on st (how: "pushed" or "fetched") and
// takes it with Learn; a stream that brings no card is reset, and false
// returned.
func (s *Service) readCard(st network.Stream, p peer.ID, how string) bool {
	_ = st.SetReadDeadline(time.Now().Add(fetchTimeout))
	wire, err := frame.Read(st, discovery.MaxNodeCardWire)
	if err != nil {
		_ = st.Reset()
		s.log.Debug("no node card from peer", "how", how, "peer", p.String(), "err", err)
		return false
	}
	if err := s.Learn(p, wire); err != nil {
		s.log.Debug("node card refused", "how", how, "peer", p.String(), "err", err)
	}
	return true
}

// overRelay is ctx for a card's stream: on the connections the node has
// (it dials nobody for a card), relayed ones included. A peer reached only
// through a relay (a room member or contact behind a NAT) is named too; a
// card is small (at most discovery.MaxNodeCardWire bytes), asked for at most
// once in RefetchAfter and pushed at most once in PushEvery, and only with
// the peers whose cards are kept or held, so a relay's per-circuit data
// budget is not at risk.
func overRelay(ctx context.Context) context.Context {
	return network.WithAllowLimitedConn(network.WithNoDial(ctx, "names"), "names")
}

// fetch asks p for its card and keeps it. When no card comes (p does not
// serve Protocol yet: it connected while starting), p is asked again when
// it connects or starts serving Protocol, not only after RefetchAfter.
func (s *Service) fetch(ctx context.Context, p peer.ID) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	st, err := s.cfg.Host.NewStream(overRelay(ctx), p, Protocol)
	if err != nil {
		s.log.Debug("no node card from peer", "peer", p.String(), "err", err)
		s.noCard(p)
		return
	}
	defer st.Close()
	_ = st.CloseWrite()
	if !s.readCard(st, p, "fetched") {
		s.noCard(p)
	}
}

// noCard marks p's ask as failed (see askMark).
func (s *Service) noCard(p peer.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.asked[p]; ok {
		m.failed = true
		s.asked[p] = m
	}
}

// Learn takes a node card that from handed over: it must be from's own.
// A card no newer than the one held is ignored.
func (s *Service) Learn(from peer.ID, wire []byte) error {
	c, err := discovery.DecodeNodeCard(wire)
	if err != nil {
		return err
	}
	if c.Peer != from {
		return fmt.Errorf("names: %s handed over the card of %s", from, c.Peer)
	}
	if c.Peer == s.self {
		return nil
	}
	switch s.wants(c.Peer) {
	case wantNone:
		return fmt.Errorf("names: %s is neither a contact nor a member of a room of this node", c.Peer)
	case wantPassing:
		return s.learnPassing(c, wire)
	}
	s.mu.Lock()
	pc, asked := s.passing[c.Peer]
	if asked && pc.card.Seq > c.Seq { // a newer one came while it asked
		c, wire = pc.card, pc.wire
	}
	old := s.cards[c.Peer]
	if old != nil && old.Seq >= c.Seq {
		if asked { // the kept card is the newer: it shows again
			delete(s.passing, c.Peer)
			s.checkMember(old)
			s.gen++
		}
		s.mu.Unlock()
		return nil
	}
	if old == nil && len(s.cards) >= MaxNames {
		s.mu.Unlock() // a requester's card stays held
		return fmt.Errorf("names: %d names known already", MaxNames)
	}
	delete(s.passing, c.Peer)
	s.cards[c.Peer] = c
	s.checkMember(c)
	s.gen++
	s.mu.Unlock()
	if s.cfg.Store != nil {
		// In pieces under the value threshold: a card replaced is
		// reclaimed by compaction, not left in the value log for good.
		ops, err := schema.SetPieces(schema.NodeCard([]byte(c.Peer)), wire)
		if err == nil {
			err = s.cfg.Store.Apply(ops, false)
		}
		if err != nil {
			return fmt.Errorf("names: keep the card of %s: %w", c.Peer, err)
		}
	}
	return nil
}

// How a peer's card is wanted.
const (
	wantNone    = iota // not asked for, not kept
	wantPassing        // a requester's: kept in memory while it asks
	wantKept           // kept, in the store too
)

// wants reports how p's card is wanted.
func (s *Service) wants(p peer.ID) int {
	if s.cfg.Wanted == nil {
		return wantKept
	}
	s.refreshLists()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.wanted[p]:
		return wantKept
	case s.asking[p]:
		return wantPassing
	}
	return wantNone
}

// refreshLists asks Wanted and Requesters again when their answers are
// more than a second old.
func (s *Service) refreshLists() {
	if s.cfg.Wanted == nil {
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	stale := s.wanted == nil || now.Sub(s.wantedAt) > time.Second || s.listsSeqKept < s.listsSeq.Load()
	if !stale {
		s.mu.Unlock()
		return
	}
	s.listsTicket++
	ticket := s.listsTicket
	s.mu.Unlock()
	seq := s.listsSeq.Load() // before the lists are read
	w, a, c := make(map[peer.ID]bool), make(map[peer.ID]bool), make(map[peer.ID]bool)
	for _, q := range s.cfg.Wanted() {
		w[q] = true
	}
	if s.cfg.Contacts != nil {
		for _, q := range s.cfg.Contacts() {
			c[q] = true
		}
	}
	if s.cfg.Requesters != nil {
		for _, q := range s.cfg.Requesters() {
			a[q] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ticket < s.listsKept {
		return // a read begun since is held: this one may predate a change
	}
	if !maps.Equal(w, s.wanted) || !maps.Equal(c, s.contacts) {
		s.gen++ // a node's rank may have changed: the table is stale
	}
	s.wanted, s.asking, s.contacts, s.wantedAt = w, a, c, now
	s.listsKept, s.listsSeqKept = ticket, seq
}

// RefreshLists asks Wanted, Contacts and Requesters again now if they
// changed since they were last asked (ListsChanged) or their answers are
// more than a second old, and returns once the names shown follow them:
// for a caller about to show the name of a node whose contact it just
// changed. It calls the list functions on the caller's goroutine.
func (s *Service) RefreshLists() { s.refreshLists() }

// ListsChanged tells the service that the peers Wanted, Contacts or
// Requesters list may have changed (a contact approved or revoked): the
// answers held are stale from now on, its loop asks them again at once
// rather than at its next tick, and the names it shows follow (a new
// contact keeps its bare handle against a stranger's). It does not wait
// (RefreshLists does); safe to call from any goroutine.
func (s *Service) ListsChanged() {
	s.listsSeq.Add(1)
	select {
	case s.listsChanged <- struct{}{}:
	default:
	}
}

// learnPassing keeps a requester's card in memory, while there is room
// (after dropping the cards of peers no longer asking).
func (s *Service) learnPassing(c *discovery.NodeCard, wire []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.passing[c.Peer]
	if ok && old.card.Seq >= c.Seq {
		return nil
	}
	if k := s.cards[c.Peer]; k != nil && k.Seq >= c.Seq {
		return nil // the card kept (a node known before) is as new
	}
	if !ok && len(s.passing) >= MaxRequesterCards {
		s.dropPassingLocked()
		if len(s.passing) >= MaxRequesterCards {
			return fmt.Errorf("names: %d cards of peers asking to be contacts held already", MaxRequesterCards)
		}
	}
	s.passing[c.Peer] = passingCard{card: c, wire: wire}
	s.checkMember(c)
	s.gen++
	return nil
}

// dropPassingLocked drops the cards of peers no longer asking. s.mu is
// held.
func (s *Service) dropPassingLocked() {
	for p := range s.passing {
		if !s.asking[p] && !s.wanted[p] {
			delete(s.passing, p)
			if k, kept := s.cards[p]; kept {
				s.checkMember(k) // what the kept card shows, again
			} else {
				delete(s.members, p)
			}
			s.gen++
		}
	}
}

// tidyPassing keeps the cards of requesters that became wanted and drops
// those of peers no longer asking.
func (s *Service) tidyPassing() {
	s.mu.Lock()
	var promote []peer.ID
	for p := range s.passing {
		promote = append(promote, p)
	}
	s.mu.Unlock()
	for _, p := range promote {
		if s.wants(p) != wantKept {
			continue
		}
		s.mu.Lock()
		pc, ok := s.passing[p]
		s.mu.Unlock()
		if ok {
			if err := s.Learn(p, pc.wire); err != nil {
				s.log.Debug("a requester's card not kept", "peer", p.String(), "err", err)
			}
		}
	}
	s.refreshLists()
	s.mu.Lock()
	s.dropPassingLocked()
	s.mu.Unlock()
}

// kept reports whether p's card is held in the store's set (not only as
// a requester's).
func (s *Service) kept(p peer.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.cards[p]
	return ok
}

// current returns the display table, rebuilt when a card came in or it is
// older than a second (contacts' hints change without telling). A table is
// built outside s.mu, one at a time: while one is built, readers of a
// table only old keep reading it, and readers of one a card changed since
// wait for the build.
func (s *Service) current() *table {
	now := s.cfg.Now()
	s.mu.Lock()
	t, gen := s.table, s.gen
	s.mu.Unlock()
	switch {
	case t != nil && t.gen == gen && now.Sub(t.built) < time.Second:
		return t
	case t != nil && t.gen == gen:
		if !s.buildMu.TryLock() {
			return t // being built again
		}
	default:
		s.buildMu.Lock()
	}
	defer s.buildMu.Unlock()
	return s.rebuild(now)
}

// rebuild builds the display table from the cards and hints held now,
// unless another build made a table current meanwhile, and keeps it.
// s.buildMu is held.
func (s *Service) rebuild(now time.Time) *table {
	handles := make(map[peer.ID]string)
	if s.cfg.Hints != nil {
		for p, h := range s.cfg.Hints() {
			if h = strings.TrimSpace(h); h != "" && len(h) <= discovery.MaxText && !strings.ContainsFunc(h, unsafe) {
				handles[p] = h
			}
		}
	}
	s.mu.Lock()
	if t := s.table; t != nil && t.gen == s.gen && now.Sub(t.built) < time.Second {
		s.mu.Unlock()
		return t // built while this one waited
	}
	gen, contacts, wanted := s.gen, s.contacts, s.wanted // the lists are replaced, never changed
	for p, c := range s.cards {
		handles[p] = c.Handle
	}
	for p, pc := range s.passing { // held only when newer than a kept one
		handles[p] = pc.card.Handle
	}
	n := len(s.cards) + len(s.passing)
	s.mu.Unlock()
	t := buildTable(now, s.self, s.cfg.Handle, handles, s.keys, func(p peer.ID) int {
		switch {
		case s.cfg.Wanted == nil:
			return rankMember
		case contacts[p]:
			return rankContact
		case wanted[p]:
			return rankMember
		}
		return rankNone
	})
	t.n, t.gen = n, gen
	t.ranked = s.cfg.Contacts != nil
	s.keys = t.keys
	s.mu.Lock()
	s.table = t // stale at once when a card came in meanwhile (gen)
	s.mu.Unlock()
	return t
}

// How far this node trusts a node with its handle: a node keeps its bare
// handle against nodes of a lower rank whose handles read the same.
const (
	rankNone    = iota // a requester (anyone with a fresh key can ask), a card kept from before
	rankMember         // a member of one of this node's rooms (any member may invite)
	rankContact        // a contact, or a node this node asked to be one
	rankSelf           // this node, and the words that stand for it
)

// Words that stand for this node where people read names: the dashboard
// calls it "here", and "you" marks it (`parley who`: "alice (you)"; "by
// you"). No other node's name may read as them.
var selfWords = sync.OnceValue(func() [][]string { return [][]string{lookalike.Keys("here"), lookalike.Keys("you")} })

// Why a node shows with its tail (table.why).
const (
	whySelf    = "its handle reads like this node's, or like \"here\" or \"you\""
	whyShared  = "another node's handle reads the same"
	whyForm    = "its handle reads like a name Parley shows (handle~SUFFIX, …SUFFIX or a peer ID)"
	whyHidden  = "its handle holds characters that show nothing, shown escaped"
	whyRemarks = "its handle reads like the handle of %s with more around it"
)

// buildTable gives every node of handles its display name: its handle, or
// handle~SUFFIX with the shortest tail of its peer ID that tells it from
// the nodes whose handles read like its own (at least minSuffix
// characters). Handles read the same when they share a key
// (lookalike.Keys: the same skeleton, ignoring case, width, invisible
// characters, small marks and look-alike letters of other scripts).
//
//   - This node (self) always keeps its bare handle, on itself. Any other
//     node whose handle reads like it, or like a word that stands for it
//     ("here", "you"), trusted or not, shows with its tail, and so does
//     any whose handle holds one of them as whole words with more around
//     it ("alice (you)", "[admin] alice", "here. (you, this node)"), so no
//     one can pass for the user on their own node.
//   - Another node keeps its bare handle when every other node whose
//     handle reads the same ranks below it: a contact (or a node this node
//     asked) above a room member, a room member above a requester or a
//     card kept from before (rank). So a stranger can neither rename a
//     contact nor look like it, and a room member (any member may invite
//     one) cannot take a contact's name. Two nodes of one rank whose
//     handles read the same both show with their tails. A stranger whose
//     handle reads like two contacts' (ALI: "ali" and "all") takes
//     neither's bare name: each node is weighed against the nodes it
//     shares a key with, not against a chain of them.
//   - A node whose handle holds the handle of a node of its rank or above
//     as whole words with more around it ("bob (laptop)", "[admin] carol",
//     "bob.": lookalike.Index) shows with its tail; the node it reads like
//     keeps its name.
//   - A node whose handle reads like a name Parley shows in place of a
//     handle (lookalike.Form: handle~SUFFIX, …SUFFIX, a peer ID), or holds
//     characters that show nothing (an older node's card, a contact's
//     request), shows with its tail, those characters escaped (\uXXXX).
//
// keys holds the keys of handles from the last build (nil: none).
func buildTable(now time.Time, self peer.ID, own string, handles map[peer.ID]string, keys map[string][]string, rank func(peer.ID) int) *table {
	t := &table{built: now, name: make(map[peer.ID]string, len(handles)), handle: handles, selfKeys: make(map[string]bool),
		byKey: make(map[string][]peer.ID), group: make(map[peer.ID][]peer.ID, len(handles)),
		byName: make(map[string][]peer.ID, len(handles)), keys: make(map[string][]string, len(handles)),
		likeSelf: make(map[peer.ID]bool), rank: make(map[peer.ID]int, len(handles)), why: make(map[peer.ID]string)}
	ps := make([]peer.ID, 0, len(handles))
	for p := range handles {
		ps = append(ps, p)
	}
	slices.Sort(ps) // the same groups and names whatever the map's order
	// Union-find over ps: nodes that share a key are joined (the groups
	// tails are told apart in).
	up := make([]int, len(ps))
	for i := range up {
		up[i] = i
	}
	root := func(i int) int {
		for up[i] != i {
			up[i] = up[up[i]]
			i = up[i]
		}
		return i
	}
	first := make(map[string]int)
	for i, p := range ps {
		t.rank[p] = rank(p)
		if p == self {
			t.rank[p] = rankSelf
		}
		h := handles[p]
		ks, ok := keys[h]
		if !ok {
			ks = lookalike.Keys(h)
		}
		t.keys[h] = ks
		for _, k := range ks {
			t.byKey[k] = append(t.byKey[k], p)
			if j, ok := first[k]; ok {
				up[root(i)] = root(j)
			} else {
				first[k] = i
			}
		}
	}
	// The keys a node's handle may hold with more around it: this node's
	// handle and the words for it, and the handles of trusted nodes, each
	// key once with the highest rank of the nodes that have it.
	type held struct {
		key    string
		rank   int
		handle string // a handle of that key and rank
	}
	var heldKeys []held
	heldID := make(map[string]int)
	idx := new(lookalike.Index)
	hold := func(k string, r int, h string) {
		if i, ok := heldID[k]; ok {
			if r > heldKeys[i].rank {
				heldKeys[i].rank, heldKeys[i].handle = r, h
			}
			return
		}
		heldID[k] = len(heldKeys)
		heldKeys = append(heldKeys, held{k, r, h})
		idx.Add(k, len(heldKeys)-1)
	}
	selfKeys := t.selfKeys
	t.held = idx
	protect := selfWords()
	if own != "" {
		protect = append([][]string{lookalike.Keys(own)}, protect...)
	}
	for _, ks := range protect {
		for _, k := range ks {
			selfKeys[k] = true
			hold(k, rankSelf, "")
		}
	}
	for _, p := range ps {
		if p != self && t.rank[p] > rankNone {
			for _, k := range t.keys[handles[p]] {
				hold(k, t.rank[p], handles[p])
			}
		}
	}
	// The highest rank among the nodes of each key, and how many have it:
	// a node tops a key when it alone has the highest rank.
	type top struct{ rank, n int }
	tops := make(map[string]top, len(t.byKey))
	for k, qs := range t.byKey {
		var x top
		for _, q := range qs {
			switch r := t.rank[q]; {
			case x.n == 0 || r > x.rank:
				x = top{r, 1}
			case r == x.rank:
				x.n++
			}
		}
		tops[k] = x
	}
	tailed := make(map[peer.ID]bool)
	for _, p := range ps {
		if p == self {
			continue
		}
		h, r := handles[p], t.rank[p]
		var why string
		first := true // every other node of its keys ranks below it
		for _, k := range t.keys[h] {
			if selfKeys[k] {
				t.likeSelf[p] = true
			}
			if x := tops[k]; x.rank != r || x.n != 1 {
				first = false
			}
			idx.Find(k, func(id int) bool {
				x := heldKeys[id]
				switch {
				case x.rank == rankSelf:
					t.likeSelf[p] = true
					return false
				case x.rank >= r && why == "" && !slices.Contains(t.keys[h], x.key):
					why = fmt.Sprintf(whyRemarks, strconv.Quote(x.handle))
				}
				return true
			})
		}
		switch {
		case t.likeSelf[p]:
			why = whySelf
		case why != "":
		case hidden(h):
			why = whyHidden
		case lookalike.Form(h, t.keys[h]):
			why = whyForm
		case !first:
			why = whyShared
		}
		if why != "" {
			t.why[p] = why
			tailed[p] = true
		}
	}
	groups := make(map[int][]peer.ID)
	for i, p := range ps {
		r := root(i)
		groups[r] = append(groups[r], p)
	}
	for _, g := range groups {
		var tails []string
		for _, p := range g {
			if tailed[p] {
				tails = suffixes(g)
				break
			}
		}
		for i, p := range g {
			t.group[p] = g
			n := show(handles[p])
			if tailed[p] {
				n += "~" + tails[i]
			}
			t.name[p] = n
			l := strings.ToLower(n)
			t.byName[l] = append(t.byName[l], p)
		}
	}
	return t
}

// hidden reports a handle holding characters that show nothing
// (lookalike.Invisible) or break the line: a card refuses most of them,
// but an older node's card, or a contact's request, may hold some.
func hidden(h string) bool { return strings.ContainsFunc(h, hiddenRune) }

func hiddenRune(r rune) bool {
	return lookalike.Invisible(r) || unsafe(r) || r == '\u2028' || r == '\u2029'
}

// show is handle h as a name shows it: characters that show nothing
// written as \uXXXX, so that "bob\u3164" does not read as "bob".
func show(h string) string {
	if !hidden(h) {
		return h
	}
	var b strings.Builder
	for _, r := range h {
		if hiddenRune(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafe reports characters a hint may not hold, beside invisible ones
// (lookalike.Invisible); a card's handle is checked by its decoder.
func unsafe(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// suffixes gives each of ps the shortest tail of its ID (at least
// minSuffix characters) that no other of ps shares. The IDs are sorted by
// their reversed text, so the longest tail an ID shares is with one of its
// two neighbours there: O(k log k) for k nodes of one handle.
func suffixes(ps []peer.ID) []string {
	type rid struct {
		i    int
		s, r string
	}
	rs := make([]rid, len(ps))
	for i, p := range ps {
		s := p.String()
		b := []byte(s)
		slices.Reverse(b)
		rs[i] = rid{i, s, string(b)}
	}
	sort.Slice(rs, func(a, b int) bool { return rs[a].r < rs[b].r })
	common := func(a, b string) int {
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		return n
	}
	out := make([]string, len(ps))
	for k, x := range rs {
		shared := 0
		if k > 0 {
			shared = max(shared, common(x.r, rs[k-1].r))
		}
		if k+1 < len(rs) {
			shared = max(shared, common(x.r, rs[k+1].r))
		}
		n := min(max(minSuffix, shared+1), len(x.s))
		out[x.i] = x.s[len(x.s)-n:]
	}
	return out
}

// Short is how a node with no known handle shows: … and the last 8
// characters of its peer ID.
func Short(p peer.ID) string {
	s := p.String()
	if len(s) > 12 {
		return "…" + s[len(s)-8:]
	}
	return s
}

// Name is how node p shows to a person.
func (s *Service) Name(p peer.ID) string {
	if n, ok := s.current().name[p]; ok {
		return n
	}
	return Short(p)
}

// NameOf is how node p shows when the handle it tells is handle, from a
// card this node does not keep (an agent card found through the DHT,
// perhaps a stranger's): its name (Name) when this node knows p's handle;
// else handle, characters that show nothing escaped, with the tail of p's
// peer ID when it reads like the handle of a node this node knows, like
// this node's or a word that stands for it (or holds one of them with
// more around it), or like a name Parley shows in place of a handle. An
// empty handle shows as Short(p).
func (s *Service) NameOf(p peer.ID, handle string) string {
	t := s.current()
	if n, ok := t.name[p]; ok {
		return n
	}
	if handle = strings.TrimSpace(handle); handle == "" {
		return Short(p)
	}
	ks := lookalike.Keys(handle)
	like := t.likeKeys(ks)
	tailed := len(like) > 0 || hidden(handle) || lookalike.Form(handle, ks)
	for _, k := range ks {
		if t.selfKeys[k] {
			tailed = true
		}
		if t.held != nil {
			t.held.Find(k, func(int) bool { tailed = true; return false })
		}
	}
	n := show(handle)
	if !tailed {
		return n
	}
	return n + "~" + suffixes(append(like, p))[len(like)]
}

// Handle is node p's handle, if known.
func (s *Service) Handle(p peer.ID) (string, bool) {
	h, ok := s.current().handle[p]
	return h, ok
}

// Entry is one known node.
type Entry struct {
	Peer   peer.ID
	Handle string
	Name   string // as shown
	// LikeSelf is set for another node whose handle reads as this node's
	// (ignoring case, width, invisible characters, small marks and
	// look-alike letters, or with more around it) or as a word that stands
	// for this node ("here", "you"); its Name has its tail.
	LikeSelf bool
	// Member is the organisation membership the node's card shows, checked
	// (nil: none, or one that does not hold).
	Member *Membership
}

// CardSeq is the seq of p's card this node keeps; ok is false when it
// keeps none.
func (s *Service) CardSeq(p peer.ID) (seq uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cards[p]; c != nil {
		return c.Seq, true
	}
	return 0, false
}

// Member is the checked organisation membership p's card shows (nil:
// none, or one that does not hold).
func (s *Service) Member(p peer.ID) *Membership {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.members[p]; ok && now.Before(m.Until) {
		return &m
	}
	return nil
}

// All lists the known nodes by name.
func (s *Service) All() []Entry {
	t := s.current()
	out := make([]Entry, 0, len(t.name))
	now := s.cfg.Now()
	s.mu.Lock()
	for p, n := range t.name {
		e := Entry{Peer: p, Handle: t.handle[p], Name: n, LikeSelf: t.likeSelf[p]}
		if m, ok := s.members[p]; ok && now.Before(m.Until) {
			e.Member = &m
		}
		out = append(out, e)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Resolve returns the node a displayed name stands for: its name as shown
// (case-folded), or handle~SUFFIX (a node of that handle whose peer ID ends
// in SUFFIX), or a handle that reads like the handle of one known node
// only, which shows bare. A contact's bare handle names the contact even
// when room members' or strangers' handles read the same (they show with
// their tails). A name that reads like the handles of several nodes, or of
// one that shows with its tail, is refused (ErrAmbiguous) naming each node
// it may stand for: the name to write, its peer ID and whether it is a
// contact. A handle~SUFFIX where no node of that handle has a peer ID
// ending in SUFFIX (a stranger's name as `parley find` shows it) stands
// for none of them: it is refused too (ErrUnknown, or ErrAmbiguous naming
// the nodes of that handle), never taken for the handle alone.
func (s *Service) Resolve(name string) (peer.ID, error) {
	t := s.current()
	name = strings.TrimSpace(name)
	if ps := t.byName[strings.ToLower(name)]; len(ps) == 1 {
		return ps[0], nil
	}
	if i := strings.LastIndexByte(name, '~'); i > 0 && i < len(name)-1 {
		tail, others := name[i+1:], t.like(name[:i])
		var match []peer.ID
		for _, p := range others {
			if strings.HasSuffix(p.String(), tail) {
				match = append(match, p)
			}
		}
		switch {
		case len(match) == 1:
			return match[0], nil
		case len(match) > 1:
			return "", t.ambiguousOf(name, match)
		}
		// A tail no node of that handle has (a stranger's name as shown,
		// a mistyped tail) names none of them: the handle alone, which
		// stops at the '~', would stand for another node.
		if len(others) == 0 {
			return "", unknown(name)
		}
		return "", t.noSuchTail(name, tail, others)
	}
	ps := t.like(name) // the nodes name may stand for
	switch {
	case len(ps) == 0:
		return "", unknown(name)
	case len(ps) == 1 && t.name[ps[0]] == t.handle[ps[0]]:
		return ps[0], nil
	case len(ps) == 1:
		p := ps[0]
		return "", &ambiguous{fmt.Sprintf("%q shows here as %s (%s): write %s, or its peer ID %s",
			name, t.name[p], t.why[p], t.name[p], p)}
	}
	return "", t.ambiguousOf(name, ps)
}

// unknown is Resolve's refusal of a name that stands for no node known.
func unknown(name string) error {
	return fmt.Errorf("%w: %q (give the node's peer ID, or see who is around: `parley who`, or the parley_who tool)", ErrUnknown, name)
}

// ambiguousOf is Resolve's refusal of a name that may stand for any of
// nodes ps.
func (t *table) ambiguousOf(name string, ps []peer.ID) error {
	return &ambiguous{fmt.Sprintf("%q may stand for any of %d nodes, whose handles read alike: write one of %s",
		name, len(ps), t.alternatives(ps))}
}

// noSuchTail is Resolve's refusal of handle~SUFFIX when no node of that
// handle has a peer ID ending in SUFFIX, naming the nodes ps of that
// handle: it is ErrAmbiguous, as the name may be meant for one of them.
func (t *table) noSuchTail(name, tail string, ps []peer.ID) error {
	return &ambiguous{fmt.Sprintf("%q: no node known whose handle reads so has a peer ID ending in %q (give the node's peer ID); the nodes of that handle are %s",
		name, tail, t.alternatives(ps))}
}

// alternatives names nodes ps in Resolve's refusals: the most trusted
// first (a contact is the likeliest meant), then by name; at most
// maxAlternatives of them, the others counted (ps is sorted so).
func (t *table) alternatives(ps []peer.ID) string {
	sort.Slice(ps, func(i, j int) bool {
		if ri, rj := t.rank[ps[i]], t.rank[ps[j]]; ri != rj {
			return ri > rj
		}
		return t.name[ps[i]] < t.name[ps[j]]
	})
	alts := make([]string, 0, min(len(ps), maxAlternatives)+1)
	for _, p := range ps[:min(len(ps), maxAlternatives)] {
		alts = append(alts, fmt.Sprintf("%s (peer ID %s, %s)", t.name[p], p, t.what(p)))
	}
	if more := len(ps) - len(alts); more > 0 {
		alts = append(alts, fmt.Sprintf("and %d more (see `parley who`)", more))
	}
	return strings.Join(alts, "; ")
}

// maxAlternatives bounds the nodes Resolve's refusal names (an agent reads
// it as its tool's result): the others are counted.
const maxAlternatives = 10

// what says what node p is to this one, in Resolve's errors.
func (t *table) what(p peer.ID) string {
	switch t.rank[p] {
	case rankSelf:
		return "this node"
	case rankContact:
		return "a contact"
	case rankMember:
		if !t.ranked {
			return "a contact or a room member"
		}
		return "a room member"
	}
	return "not a contact"
}

// ambiguous is a name Resolve refuses: it reads like the handles of
// several nodes, or of one shown with its tail. It is ErrAmbiguous.
type ambiguous struct{ msg string }

func (e *ambiguous) Error() string        { return "names: " + e.msg }
func (e *ambiguous) Is(target error) bool { return target == ErrAmbiguous }

// like is the nodes whose handles read like h: the groups of the nodes
// that share a key with it (the nodes of a key are all of one group, so
// each key brings in one group, whatever its size).
func (t *table) like(h string) []peer.ID { return t.likeKeys(lookalike.Keys(h)) }

// likeKeys is like, for a handle whose keys are ks.
func (t *table) likeKeys(ks []string) []peer.ID {
	var out []peer.ID
	var seen []peer.ID // a node of each group taken
	for _, k := range ks {
		ps := t.byKey[k]
		if len(ps) == 0 {
			continue
		}
		g := t.group[ps[0]]
		if slices.ContainsFunc(seen, func(q peer.ID) bool { return slices.Contains(g, q) }) {
			continue
		}
		seen = append(seen, g[0])
		out = append(out, g...)
	}
	return out
}
