package agents

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/ratelimit"
	"github.com/parley-mesh/parley/internal/serving"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Routing is the part of the node's Kad-DHT the service uses;
// *dht.IpfsDHT implements it.
type Routing interface {
	PutValue(ctx context.Context, key string, value []byte, opts ...routing.Option) error
	GetValue(ctx context.Context, key string, opts ...routing.Option) ([]byte, error)
	Provide(ctx context.Context, key cid.Cid, broadcast bool) error
	FindProvidersAsync(ctx context.Context, key cid.Cid, count int) <-chan peer.AddrInfo
	FindPeer(ctx context.Context, p peer.ID) (peer.AddrInfo, error)
}

// Contacts is what the service needs of the node's contact service.
type Contacts interface {
	// Allowed returns nil if p may talk to this node.
	Allowed(p peer.ID) error
	// Active returns the peers with an active contact.
	Active() []Contact
}

// Store keeps registrations across restarts; internal/store's DB
// implements it.
type Store interface {
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
	Apply(ops []schema.Op, durable bool) error
}

// Defaults and limits of the service.
const (
	// DefaultTTL is how long an agent lives without a heartbeat when it
	// registers without a TTL and Config.DefaultTTL is zero.
	DefaultTTL = 60 * time.Second
	// DefaultCardTTL is the lifetime of published cards when
	// Config.CardTTL is zero.
	DefaultCardTTL = time.Hour
	// WithdrawTTL is the lifetime of a tombstone card; a card that lives no
	// longer than this (expires − seq) is a withdrawal.
	WithdrawTTL = time.Minute
	// MinCardTTL is the shortest Config.CardTTL.
	MinCardTTL = 2 * WithdrawTTL
	// MissedHeartbeats is how many heartbeats a contact may miss before its
	// agents are shown offline.
	MissedHeartbeats = 3
	// PresenceRateLimit is how many presence messages one contact may send
	// a minute (a burst of as many).
	PresenceRateLimit = 120
	// CardsRateLimit is how many /parley/cards/1 streams one peer may open
	// a minute (a burst of as many).
	CardsRateLimit = 120
)

// Config configures a Service. Zero values are documented.
type Config struct {
	Host     host.Host      // required
	Key      crypto.PrivKey // the node's key; required
	Routing  Routing        // the node's DHT; required
	Contacts Contacts       // required
	// Store keeps registrations across restarts. Nil keeps them in memory.
	Store Store
	// Handle is the user's display name, put in cards. One that is not a
	// valid card handle is cleaned (control characters dropped, cut to 64
	// bytes) or left out.
	Handle string
	// Member returns the node's organisation membership certificate,
	// put in cards when it fits (discovery.MaxCardMember); nil: none.
	Member func() []byte
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
	// Registry receives metrics; nil means none are exported.
	Registry prometheus.Registerer
	// DefaultTTL is the TTL of a registration that gives none. Zero means
	// DefaultTTL (60 s).
	DefaultTTL time.Duration
	// Heartbeat is how often presence is re-sent to contacts unchanged; a
	// contact silent for MissedHeartbeats of them is shown offline. Zero
	// means discovery.PresenceHeartbeat (5 min).
	Heartbeat time.Duration
	// MinInterval is the shortest time between two presence messages to
	// one contact; changes within it are coalesced. Zero means
	// discovery.PresenceMinInterval (2 s) or Heartbeat/4, whichever is less.
	MinInterval time.Duration
	// CardTTL is the lifetime of published cards; they are re-published at
	// half of it. Zero means DefaultCardTTL (1 h); it must be within
	// [MinCardTTL, discovery.MaxCardTTL].
	CardTTL time.Duration
	// FindTimeout bounds one Find; what was found by then is returned.
	// Zero means 10 s.
	FindTimeout time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Admit is asked before a name is registered: an error refuses it (a
	// killed agent), and Register returns it as it is. Nil admits all.
	Admit func(name identity.AgentName) error
	// AddrFilter picks, of the addresses a DHT answer gives a provider,
	// those a find keeps and dials (the node's DHT keeps the same ones):
	// any DHT server can name thousands. Nil keeps the first
	// MaxProviderAddrs.
	AddrFilter func([]ma.Multiaddr) []ma.Multiaddr
	// Rename is asked before a session bound to name takes another
	// (Session with a new Name): an error refuses it (a muted agent, which
	// would post under the new name), and Session returns it as it is. Nil
	// allows all.
	Rename func(name identity.AgentName) error
}

// MaxProviderAddrs is how many of a provider's addresses a find keeps and
// dials when Config.AddrFilter is nil.
const MaxProviderAddrs = 16

func (c Config) withDefaults() (Config, error) {
	if c.Host == nil || c.Key == nil || c.Routing == nil || c.Contacts == nil {
		return c, fmt.Errorf("%w: Host, Key, Routing and Contacts are required", ErrBadConfig)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.DefaultTTL == 0 {
		c.DefaultTTL = DefaultTTL
	}
	if c.AddrFilter == nil {
		c.AddrFilter = func(a []ma.Multiaddr) []ma.Multiaddr { return a[:min(len(a), MaxProviderAddrs)] }
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = discovery.PresenceHeartbeat
	}
	if c.MinInterval == 0 {
		c.MinInterval = min(discovery.PresenceMinInterval, c.Heartbeat/4)
	}
	if c.CardTTL == 0 {
		c.CardTTL = DefaultCardTTL
	}
	if c.FindTimeout == 0 {
		c.FindTimeout = 10 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	switch {
	case c.DefaultTTL < 0 || c.DefaultTTL > MaxTTL:
		return c, fmt.Errorf("%w: DefaultTTL %s not in (0, %s]", ErrBadConfig, c.DefaultTTL, MaxTTL)
	case c.Heartbeat < 10*time.Millisecond:
		return c, fmt.Errorf("%w: Heartbeat %s is under 10ms", ErrBadConfig, c.Heartbeat)
	case c.MinInterval < time.Millisecond || c.MinInterval > c.Heartbeat:
		return c, fmt.Errorf("%w: MinInterval %s not in [1ms, Heartbeat]", ErrBadConfig, c.MinInterval)
	case c.CardTTL < MinCardTTL || c.CardTTL > discovery.MaxCardTTL:
		return c, fmt.Errorf("%w: CardTTL %s not in [%s, %s]", ErrBadConfig, c.CardTTL, MinCardTTL, discovery.MaxCardTTL)
	case c.FindTimeout < 0:
		return c, fmt.Errorf("%w: negative FindTimeout", ErrBadConfig)
	}
	return c, nil
}

// Service is one node's agent service. Its methods are safe for concurrent
// use.
type Service struct {
	cfg    Config
	self   peer.ID
	handle string // the handle put in cards ("" if the user's cannot be)
	log    *slog.Logger
	m      *metrics
	now    func() time.Time

	// mu protects the local agents and everything published about them.
	mu       sync.Mutex
	reg      registry
	pub      map[identity.AgentName]*pubState // published cards of local agents
	tombs    map[identity.AgentName]*tombstone
	provided map[string]time.Time // provider key → when last provided
	seq      uint64               // last seq used in a card or presence message
	version  uint64               // bumped whenever what contacts see changes
	sessions map[string]profile   // session profiles, without a Store that can read them back

	// sessMu makes each Session and Unbind whole: a session's profile is
	// read, its names registered and unregistered, and the profile saved,
	// with no other of them in between (a bind read between a rename's
	// unregister and its save registered the old name again).
	sessMu sync.Mutex

	outMu sync.Mutex // protects out
	out   map[peer.ID]*outState

	inMu    sync.Mutex // protects remote, lastSeq, probing
	remote  map[peer.ID]*remoteState
	lastSeq map[peer.ID]uint64
	probing map[peer.ID]bool

	limPresence, limCards *ratelimit.Limiter[peer.ID]

	emptyMu sync.Mutex            // protects empty
	empty   map[peer.ID]time.Time // providers that gave no valid card → until when they are asked last

	pubKick, presKick, sweepKick chan struct{}

	lifeMu  sync.Mutex // protects closing, running
	closing bool
	running bool
	runDone chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	notif   *network.NotifyBundle
}

// New builds the service and loads the stored registrations. It starts
// nothing; Run does.
func New(cfg Config) (*Service, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	self, err := peer.IDFromPrivateKey(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: key: %v", ErrBadConfig, err)
	}
	s := &Service{
		cfg: cfg, self: self, log: cfg.Logger, now: cfg.Now,
		reg: newRegistry(), pub: make(map[identity.AgentName]*pubState), tombs: make(map[identity.AgentName]*tombstone),
		provided: make(map[string]time.Time), out: make(map[peer.ID]*outState),
		remote: make(map[peer.ID]*remoteState), lastSeq: make(map[peer.ID]uint64), probing: make(map[peer.ID]bool),
		empty:       make(map[peer.ID]time.Time),
		limPresence: ratelimit.New[peer.ID](PresenceRateLimit, 0), limCards: ratelimit.New[peer.ID](CardsRateLimit, 0),
		pubKick: make(chan struct{}, 1), presKick: make(chan struct{}, 1), sweepKick: make(chan struct{}, 1),
		runDone: make(chan struct{}),
	}
	s.handle = cardHandle(cfg.Key, self, cfg.Handle)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.m = newMetrics(cfg.Registry, s)
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// cardHandle returns h as a card may carry it: control and format
// characters dropped, white space trimmed, cut to discovery.MaxText bytes;
// "" if even that is refused.
func cardHandle(priv crypto.PrivKey, self peer.ID, h string) string {
	h = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(h, ""))
	for len(strings.TrimSpace(h)) > discovery.MaxText {
		_, n := utf8.DecodeLastRuneInString(h)
		h = h[:len(h)-n]
	}
	h = strings.TrimSpace(h)
	c := discovery.Card{Peer: self, Handle: h, Agent: identity.HumanAgent, Seq: 1, Expires: 1}
	if _, err := discovery.SealCard(priv, &c); err != nil {
		return ""
	}
	return h
}

// load reads the stored registrations; expired or damaged ones are deleted.
func (s *Service) load() error {
	if s.cfg.Store == nil {
		return nil
	}
	now := s.now()
	var drop []schema.Op
	err := s.cfg.Store.ScanFrom(schema.LocalAgentPrefix(), nil, false, func(k, v []byte) bool {
		a, err := unmarshalLocal(s.cfg.Key, s.self, v)
		switch {
		case err != nil:
			s.log.Warn("dropping a damaged agent registration", "key", string(k), "err", err)
		case !a.live(now):
		default:
			if _, err := s.reg.register(a, now); err == nil {
				s.pub[a.Name] = &pubState{next: now}
				return true
			}
		}
		drop = append(drop, schema.Op{Key: append([]byte(nil), k...), Delete: true})
		return true
	})
	if err != nil {
		return fmt.Errorf("agents: load: %w", err)
	}
	if len(drop) > 0 {
		if err := s.cfg.Store.Apply(drop, false); err != nil {
			return fmt.Errorf("agents: load: %w", err)
		}
	}
	return nil
}

// Self is this node's peer ID.
func (s *Service) Self() peer.ID { return s.self }

// Run serves /parley/presence/1 and /parley/cards/1, publishes cards, sends
// presence and sweeps expired agents until ctx ends or Close is called. It
// returns once its goroutines have stopped.
func (s *Service) Run(ctx context.Context) error {
	s.lifeMu.Lock()
	if s.closing || s.running {
		s.lifeMu.Unlock()
		return ErrClosed
	}
	s.running = true
	s.lifeMu.Unlock()
	defer close(s.runDone)

	h := s.cfg.Host
	watch, err := serving.Watch(s.ctx, h, discovery.ProtocolPresence, s.connected)
	if err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	h.SetStreamHandler(discovery.ProtocolPresence, s.handlePresence)
	h.SetStreamHandler(ProtocolCards, s.handleCards)
	s.notif = &network.NotifyBundle{
		ConnectedF:    func(_ network.Network, c network.Conn) { s.connected(c.RemotePeer()) },
		DisconnectedF: func(_ network.Network, c network.Conn) { s.disconnected(c.RemotePeer()) },
	}
	h.Network().Notify(s.notif)
	s.spawn(s.publishLoop)
	s.spawn(s.presenceLoop)
	s.spawn(s.sweepLoop)
	s.spawn(watch)

	select {
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
	s.lifeMu.Lock()
	s.closing = true
	s.lifeMu.Unlock()
	s.cancel()
	h.RemoveStreamHandler(discovery.ProtocolPresence)
	h.RemoveStreamHandler(ProtocolCards)
	h.Network().StopNotify(s.notif)
	s.wg.Wait()
	return nil
}

// Close stops the service and waits for Run to return. It is idempotent.
func (s *Service) Close() error {
	s.lifeMu.Lock()
	s.closing = true
	running := s.running
	s.lifeMu.Unlock()
	s.cancel()
	if running {
		<-s.runDone
	}
	return nil
}

// spawn runs f on a goroutine that Run waits for, unless the service is
// stopping.
func (s *Service) spawn(f func()) {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closing {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// nextSeq returns a seq above every one used before: unix milliseconds, or
// one more than the last. Callers hold mu.
func (s *Service) nextSeq(now time.Time) uint64 {
	s.seq = max(s.seq+1, uint64(max(now.UnixMilli(), 1)))
	return s.seq
}

// changed records what an operation changed and wakes the loops that act
// on it. Callers hold mu.
func (s *Service) changed(name identity.AgentName, ch change, now time.Time) {
	if ch.card {
		p := s.pub[name]
		if p == nil {
			p = &pubState{}
			s.pub[name] = p
		}
		p.gen++
		p.next = now
		p.fails = 0
		delete(s.tombs, name)
		kick(s.pubKick)
	}
	if ch.presence {
		s.version++
		kick(s.presKick)
	}
}

// persist writes or deletes a registration. Callers hold mu, so the store
// sees changes in order. A failure is logged: the agent lives on in memory.
func (s *Service) persist(name identity.AgentName, a *local) {
	if s.cfg.Store == nil {
		return
	}
	op := schema.Op{Key: schema.LocalAgent(string(name)), Delete: true}
	if a != nil {
		op = schema.Op{Key: schema.LocalAgent(string(name)), Val: a.marshal()}
	}
	if err := s.cfg.Store.Apply([]schema.Op{op}, false); err != nil {
		s.log.Warn("agent registration not stored", "agent", string(name), "err", err)
	}
}

func (s *Service) alive() error {
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// Register registers a local agent, or updates it if the same session (or
// nobody live) holds the name; an update keeps the agent's state, and its
// client's process when req names none. Its card is published in the
// background.
func (s *Service) Register(ctx context.Context, req RegisterRequest) (Info, error) {
	if err := s.alive(); err != nil {
		return Info{}, err
	}
	now := s.now()
	a, err := newLocal(s.cfg.Key, s.self, req, s.cfg.DefaultTTL, now)
	if err != nil {
		return Info{}, fmt.Errorf("agents: register: %w", err)
	}
	if s.cfg.Admit != nil {
		if err := s.cfg.Admit(a.Name); err != nil {
			return Info{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, err := s.reg.register(a, now)
	if err != nil {
		return Info{}, fmt.Errorf("agents: register: %w", err)
	}
	s.changed(a.Name, ch, now)
	s.persist(a.Name, a)
	kick(s.sweepKick)
	s.log.Debug("agent registered", "agent", string(a.Name), "ttl", a.TTL)
	return a.info(), nil
}

// Heartbeat renews a local agent and applies req. It returns ErrUnknownAgent
// if the agent is not registered (or was swept): register it again.
func (s *Service) Heartbeat(ctx context.Context, name string, req HeartbeatRequest) (Info, error) {
	if err := s.alive(); err != nil {
		return Info{}, err
	}
	n, err := ParseName(name)
	if err != nil {
		return Info{}, fmt.Errorf("agents: heartbeat: %w", err)
	}
	var st *discovery.State
	if req.State != nil {
		v, err := ParseState(*req.State)
		if err != nil {
			return Info{}, fmt.Errorf("agents: heartbeat %s: %w", n, err)
		}
		st = &v
	}
	var w *string
	if req.WorkingOn != nil {
		v := strings.TrimSpace(*req.WorkingOn)
		if err := checkWorkingOn(s.cfg.Key, s.self, n, v); err != nil {
			return Info{}, fmt.Errorf("agents: heartbeat %s: %w", n, err)
		}
		w = &v
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.reg.get(n, now); a != nil && req.Session != "" && a.Session != req.Session {
		return Info{}, fmt.Errorf("agents: heartbeat: %w: %q is registered by another session (client %q)", ErrNameTaken, n, a.Client)
	}
	a, ch, err := s.reg.heartbeat(n, st, w, now)
	if err != nil {
		return Info{}, fmt.Errorf("agents: heartbeat: %w", err)
	}
	s.changed(n, ch, now)
	s.persist(n, a)
	return a.info(), nil
}

// Held refuses (ErrNameTaken) a call for name made by session when
// another session's live agent holds the name; a name not registered, or
// a session "", is not refused here.
func (s *Service) Held(name, session string) error {
	if session == "" {
		return nil
	}
	n, err := ParseName(name)
	if err != nil {
		return nil // not an agent: the endpoint answers
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.reg.get(n, now); a != nil && a.Session != session {
		return fmt.Errorf("%w: %q is registered by another session (client %q) now: this session no longer holds the name", ErrNameTaken, n, a.Client)
	}
	return nil
}

// UnregisterOf is Unregister for the end of one connection (conn, a
// RegisterRequest.Connection) of session: it leaves the registration as it
// is (ErrNameTaken) when another session holds the name, or the same
// session bound it again by another connection (a client that reconnected
// while its old connection was still ending). "" checks nothing.
func (s *Service) UnregisterOf(ctx context.Context, name, session, conn string) error {
	if err := s.alive(); err != nil {
		return err
	}
	n, err := ParseName(name)
	if err != nil {
		return fmt.Errorf("agents: unregister: %w", err)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	a, known := s.reg.agents[n]
	if !known {
		return fmt.Errorf("agents: unregister: %w: %q is not registered on this node (`parley agent list` lists those that are)", ErrUnknownAgent, n)
	}
	if err := notOurs(a, session, conn); err != nil {
		return err
	}
	s.reg.remove(n, now)
	s.gone(n, now)
	s.persist(n, nil)
	s.log.Debug("agent unregistered", "agent", string(n))
	return nil
}

// notOurs refuses (ErrNameTaken) a registration that another session, or
// another connection of session, holds.
func notOurs(a *local, session, conn string) error {
	if session != "" && a.Session != session {
		return fmt.Errorf("agents: unregister: %w: %q is registered by another session now", ErrNameTaken, a.Name)
	}
	if conn != "" && a.Connection != "" && a.Connection != conn {
		return fmt.Errorf("agents: unregister: %w: %q is registered by another connection of the session now", ErrNameTaken, a.Name)
	}
	return nil
}

// Ours is UnregisterOf's check alone: its refusal, nil when it would
// unregister name (or name is not registered).
func (s *Service) Ours(name, session, conn string) error {
	n, err := ParseName(name)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.reg.agents[n]; a != nil {
		return notOurs(a, session, conn)
	}
	return nil
}

// Unregister removes a local agent and withdraws its card. It returns
// ErrUnknownAgent if no agent of that name is registered, so a user who
// mistyped the name is told.
func (s *Service) Unregister(ctx context.Context, name string) error {
	return s.UnregisterOf(ctx, name, "", "")
}

// gone withdraws the card of a removed agent and tells contacts. Callers
// hold mu.
func (s *Service) gone(name identity.AgentName, now time.Time) {
	if p := s.pub[name]; p != nil {
		delete(s.pub, name)
		if p.card != nil { // sealed, so perhaps in the DHT
			s.tombs[name] = &tombstone{next: now}
			kick(s.pubKick)
		}
	}
	s.version++
	kick(s.presKick)
}

// List returns the live local agents, sorted by name.
func (s *Service) List() []Info {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	as := s.reg.list(now)
	out := make([]Info, len(as))
	for i, a := range as {
		out[i] = a.info()
	}
	return out
}

// ByProcess returns the live agents whose client program is a process of
// pids (a process's ancestry, nearest first: procs.Ancestors), taking the
// first of pids that is any live agent's client, and that process. An
// agent client starts its MCP server and its tools' shell commands, so a
// command's nearest ancestor that is a client is the client that ran it;
// one client may serve several agents (a Codex thread each). Nothing
// matches: 0 and no names.
func (s *Service) ByProcess(pids []int) (pid int, names []string) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	by := make(map[int][]string)
	for _, a := range s.reg.list(now) {
		if a.ClientPID > 0 {
			by[a.ClientPID] = append(by[a.ClientPID], string(a.Name))
		}
	}
	for _, p := range pids {
		if ns := by[p]; len(ns) > 0 {
			return p, ns // sorted: the registry lists by name
		}
	}
	return 0, nil
}

// sweepLoop removes each agent at its expiry.
func (s *Service) sweepLoop() {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.sweepKick:
		case <-t.C:
		}
		next := s.sweep()
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(s.now()), time.Millisecond)
		}
		resetTimer(t, wait)
	}
}

// sweep removes the expired agents and returns the next expiry.
func (s *Service) sweep() time.Time {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	gone, next := s.reg.sweep(now)
	for _, n := range gone {
		s.gone(n, now)
		s.persist(n, nil)
		s.m.swept.Inc()
		s.log.Info("agent swept: no heartbeat within its TTL", "agent", string(n))
	}
	return next
}

// resetTimer stops t, drains it and sets it to d.
func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}
