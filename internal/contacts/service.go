package contacts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/lograte"
	"github.com/parley-mesh/parley/internal/ratelimit"
	"github.com/parley-mesh/parley/internal/serving"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Store is where contact records live; internal/store's DB implements it.
type Store interface {
	// Lookup returns a copy of the value at key and whether it exists.
	Lookup(key []byte) ([]byte, bool, error)
	// ScanFrom calls fn for the keys with prefix from start (nil: the
	// first) in key order, or reverse order, until fn returns false.
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
	// Apply writes ops atomically; with durable set it returns once they
	// are on disk.
	Apply(ops []schema.Op, durable bool) error
}

// Config configures a Service. Zero values are documented.
type Config struct {
	Host  host.Host      // required
	Store Store          // required
	Key   crypto.PrivKey // the node's key; required
	// Handle is this user's display name, sent with requests and approvals.
	// Control characters are dropped and it is cut to consent.MaxHandle.
	Handle string
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
	// Registry receives metrics; nil means none are exported.
	Registry prometheus.Registerer
	// FindPeer looks up a peer's addresses (the node passes its DHT's
	// FindPeer). Nil: only peers with known addresses can be reached.
	FindPeer func(ctx context.Context, p peer.ID) (peer.AddrInfo, error)
	// SharesRoom reports whether p is a member node of a room this node is
	// in (see the package documentation). Nil means never.
	SharesRoom func(p peer.ID) bool
	// Known reports whether the user knows p without a contact: a member
	// of a room this node is in, and (as the node learns of them) members
	// of the user's organisation. A known peer's contact request never
	// gives way to strangers' (see consent.Policy). Nil means SharesRoom.
	Known func(p peer.ID) bool
	// AutoApprove, if set, is asked about each contact request received
	// (after it is stored): ok approves it with scopes, valid until until,
	// without the user (organisation trust). Nil: the user decides.
	AutoApprove func(ctx context.Context, p peer.ID) (scopes []string, until time.Time, ok bool)
	// UserDecided, if set, is told when the user asks p to be a contact,
	// approves p's request or revokes the contact with p (an approval by
	// AutoApprove is not the user's): the node forgets that a contact
	// with p was made through organisation trust, so that a contact the
	// user made is never revoked for an organisation's sake.
	UserDecided func(p peer.ID)
	// Changed, if set, is called after each change of the contact book
	// is stored (a request, approval, denial, revocation, renewal, from
	// the user or a peer), outside the service's locks: the node's name
	// service ranks contacts' handles above others' at once, not at its
	// next tick.
	Changed func()
	// Book tunes the contact book: cool-down after deny or revoke, default
	// validity, cap on pending requests. Zero: the consent defaults.
	Book consent.Policy
	// RetryInterval is how often undelivered approvals, requests and
	// revocations are sent again. Zero means 2 minutes.
	RetryInterval time.Duration
	// RateLimit is how many contact messages one peer may send per minute.
	// Zero means 20.
	RateLimit int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Audit receives each decision on a contact once it is stored: the
	// user's requests, approvals, denials and revocations (actor "human")
	// and those of peers (actor "peer:<id>"). Nil records nothing.
	Audit func(audit.Record)
}

// Timeouts: of one exchange on a stream, of one dial or DHT lookup, and of
// a whole user call's delivery (dial, lookup and exchange), which stays
// under the CLI's default 30 s so the user hears what happened.
const (
	exchangeTimeout = 20 * time.Second
	dialTimeout     = 10 * time.Second
	deliverTimeout  = 25 * time.Second
)

// Service is one node's contact service. Its methods are safe for
// concurrent use.
type Service struct {
	cfg  Config
	self peer.ID
	log  *slog.Logger
	// peerLogs bounds the lines that peers' messages cause: refusals,
	// and strangers' requests.
	peerLogs *lograte.Limiter
	book     *consent.Book
	m        *metrics
	now      func() time.Time

	// mu serialises each mutating Book call with the write of the records it
	// returns, so the store sees them in order.
	mu sync.Mutex

	stateMu  sync.Mutex                  // protects the fields below
	out      map[peer.ID]chan struct{}   // one outbound exchange at a time per peer
	done     map[string]bool             // deliveries answered since start, by deliveryKey
	shown    map[peer.ID]string          // the certificate shown to each connected contact, by deliveryKey
	lim      *ratelimit.Limiter[peer.ID] // inbound rate limits of peers the node does not know
	limKnown *ratelimit.Limiter[peer.ID] // and of those it knows
	// strangerAudits bounds the audit lines of requests from peers the
	// node does not know; unaudited counts those left out since the last.
	strangerAudits *rate.Limiter
	unaudited      atomic.Int64
	closing        bool // set by Close: no new goroutines
	// deciding holds the peers whose request AutoApprove is deciding.
	decideMu sync.Mutex
	deciding map[peer.ID]*deciding

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	notif  *network.NotifyBundle
}

// New builds the service and loads the stored contacts. It starts nothing.
func New(cfg Config) (*Service, error) {
	if cfg.Host == nil || cfg.Store == nil || cfg.Key == nil {
		return nil, errors.New("contacts: config needs Host, Store and Key")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 2 * time.Minute
	}
	if cfg.RateLimit <= 0 {
		cfg.RateLimit = 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Handle = cleanHandle(cfg.Handle)
	book, err := consent.NewBook(cfg.Key, cfg.Book)
	if err != nil {
		return nil, fmt.Errorf("contacts: %w", err)
	}
	s := &Service{
		cfg: cfg, self: book.Self(), log: cfg.Logger, book: book, now: cfg.Now,
		out: make(map[peer.ID]chan struct{}), done: make(map[string]bool), shown: make(map[peer.ID]string), lim: ratelimit.New[peer.ID](cfg.RateLimit, 0), limKnown: ratelimit.New[peer.ID](cfg.RateLimit, 0),
		strangerAudits: rate.NewLimiter(rate.Limit(StrangerAudits)/60, StrangerAudits),
		peerLogs:       lograte.New(20),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// Records are kept in pieces (schema.SetPieces); an older Parley's
	// whole records read as they are.
	j := schema.NewJoiner(schema.ContactPrefix())
	err = cfg.Store.ScanFrom(schema.ContactPrefix(), nil, false, func(k, v []byte) bool {
		j.Add(k, v)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("contacts: load: %w", err)
	}
	joined, damaged := j.Done()
	if len(damaged) > 0 {
		s.log.Error("some contact records are damaged and were not loaded", "err", errors.Join(damaged...))
	}
	recs := make([][]byte, len(joined))
	for i, r := range joined {
		recs[i] = r.Val
	}
	if err := book.Load(recs); err != nil {
		// The good records are loaded; a damaged one must not stop the node.
		s.log.Error("some contact records could not be loaded", "err", err)
	}
	s.m = newMetrics(cfg.Registry, s)
	return s, nil
}

// cleanHandle makes a display name fit consent's handle rules.
func cleanHandle(h string) string {
	h = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(h, ""))
	for utf8.RuneCountInString(h) > consent.MaxHandle {
		_, n := utf8.DecodeLastRuneInString(h)
		h = h[:len(h)-n]
	}
	return h
}

// Book returns the contact book (read-only use: Get, List, Allowed).
func (s *Service) Book() *consent.Book { return s.book }

// Self is this node's peer ID.
func (s *Service) Self() peer.ID { return s.self }

// Start serves /parley/contact/1, re-sends what peers missed when they
// connect, and retries every RetryInterval.
func (s *Service) Start(ctx context.Context) error {
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	// A peer that connected while it was starting may not have served the
	// protocol yet: what it missed then goes as soon as it says it does
	// (identify's push), not at the next retry.
	watch, err := serving.Watch(s.ctx, s.cfg.Host, consent.ProtocolID, s.reached)
	if err != nil {
		return fmt.Errorf("contacts: %w", err)
	}
	s.cfg.Host.SetStreamHandler(consent.ProtocolID, s.handle)
	s.notif = &network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		s.reached(c.RemotePeer())
	}, DisconnectedF: func(n network.Network, c network.Conn) {
		p := c.RemotePeer()
		if len(n.ConnsToPeer(p)) == 0 {
			s.stateMu.Lock()
			delete(s.shown, p)
			s.stateMu.Unlock()
		}
	}}
	s.cfg.Host.Network().Notify(s.notif)
	s.expire()
	s.spawn(s.retryLoop)
	s.spawn(watch)
	return nil
}

// reached sends p, just connected or just serving the protocol, what this
// node has for it: undelivered work, and its certificate if p is an active
// contact.
func (s *Service) reached(p peer.ID) {
	s.forgetRevocationSent(p)
	if s.hasWork(p) {
		s.spawn(func() { s.redeliver(s.ctx, p) })
	}
	if st, ok := s.book.State(p, s.now()); ok && st == consent.StateActive {
		s.spawn(func() { s.showCert(s.ctx, p) })
	}
}

// known reports whether p's contact request is a known peer's.
func (s *Service) known(p peer.ID) bool {
	if s.cfg.Known != nil {
		return s.cfg.Known(p)
	}
	return s.cfg.SharesRoom != nil && s.cfg.SharesRoom(p)
}

// expire drops incoming requests that waited past their TTL (also those
// that expired while the node was stopped).
func (s *Service) expire() {
	if err := s.apply(s.book.Expire); err != nil {
		s.log.Warn("expired contact requests not dropped", "err", err)
	}
}

// Close stops the service and waits for its goroutines. It is idempotent.
func (s *Service) Close() error {
	s.stateMu.Lock()
	if s.closing {
		s.stateMu.Unlock()
		return nil
	}
	s.closing = true
	s.stateMu.Unlock()
	s.cancel()
	s.cfg.Host.RemoveStreamHandler(consent.ProtocolID)
	if s.notif != nil {
		s.cfg.Host.Network().StopNotify(s.notif)
	}
	s.wg.Wait()
	return nil
}

// spawn runs f on a goroutine that Close waits for, unless Close began.
func (s *Service) spawn(f func()) {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if s.closing {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// apply runs a mutating Book call and persists the records it returns,
// under mu. Records are written durably: a crash must not forget a
// revocation or an approval.
func (s *Service) apply(f func(now time.Time) ([]consent.Record, error)) error {
	changed, err := s.applyLocked(f)
	if changed && s.cfg.Changed != nil {
		s.cfg.Changed()
	}
	return err
}

// applyLocked is apply's work under mu; changed reports whether the book
// changed.
func (s *Service) applyLocked(f func(now time.Time) ([]consent.Record, error)) (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs, err := f(s.now())
	// A call that fails may still have changed the book (an incoming
	// request drops expired ones first): those records are kept too.
	if perr := s.persist(recs); perr != nil && err == nil {
		err = perr
	}
	return len(recs) > 0, err
}

func (s *Service) persist(recs []consent.Record) error {
	if len(recs) == 0 {
		return nil
	}
	// Each record goes in pieces under the value threshold: a stranger's
	// request dropped from the book is then reclaimed by compaction, not
	// left in the value log for good.
	var ops []schema.Op
	for _, r := range recs {
		key := schema.Contact([]byte(r.Peer))
		if r.Delete {
			ops = append(ops, schema.DeletePieces(key)...)
			continue
		}
		rops, err := schema.SetPieces(key, r.Value)
		if err != nil {
			s.log.Error("contact record not stored", "err", err)
			return fmt.Errorf("contacts: store: %w", err)
		}
		ops = append(ops, rops...)
	}
	if err := s.cfg.Store.Apply(ops, true); err != nil {
		s.log.Error("contact record not stored", "err", err)
		return fmt.Errorf("contacts: store: %w", err)
	}
	return nil
}

// lockPeer takes the per-peer lock that keeps outbound exchanges with p one
// at a time, so that a re-send never races the user's own call.
func (s *Service) lockPeer(ctx context.Context, p peer.ID) (unlock func(), err error) {
	s.stateMu.Lock()
	ch := s.out[p]
	if ch == nil {
		ch = make(chan struct{}, 1)
		s.out[p] = ch
	}
	s.stateMu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.ctx.Done():
		return nil, ErrClosed
	}
}

// allow takes one token from p's bucket: RateLimit a minute, bursting to
// RateLimit. Peers the node knows (co-members, contacts and peers in its
// book) have buckets apart from the others', so a flood of fresh keys,
// which fills a limiter's table and then shares one bucket, never limits
// them as one of the crowd.
func (s *Service) allow(p peer.ID) bool {
	now := s.now()
	if _, inBook := s.book.Get(p, now); inBook || s.known(p) {
		return s.limKnown.Allow(p, now)
	}
	return s.lim.Allow(p, now)
}

// record hands a decision about the contact with p to the audit log.
func (s *Service) record(actor, action string, p peer.ID, detail map[string]string) {
	if s.cfg.Audit == nil {
		return
	}
	s.cfg.Audit(audit.Record{Actor: actor, Action: action, Subject: p.String(), Detail: detail})
}

// peerActor names a remote peer as the actor of a decision.
func peerActor(p peer.ID) string { return "peer:" + p.String() }
