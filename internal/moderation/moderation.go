package moderation

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// DefaultPostLimit is how many posts (messages and asks) an agent may make
// in a minute unless configured otherwise; it may make them all at once.
// No agent that talks with people or other agents comes near it.
const DefaultPostLimit = 120

// MaxMute is the longest timed mute; a mute without a duration lasts until
// unmuted.
const MaxMute = 365 * 24 * time.Hour

// ActionRevive is the audit action of a revive (kill's undo).
const ActionRevive = "agent.revive"

// Store is what the service needs of the node's store; internal/store's DB
// implements it.
type Store interface {
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
	Apply(ops []schema.Op, durable bool) error
}

// Config configures a Service. Zero values are documented.
type Config struct {
	Self  peer.ID // required: the node's peer ID
	Store Store   // nil keeps rules in memory only
	// PostLimit is the most posts per agent per minute; 0 means
	// DefaultPostLimit, a negative value no limit.
	PostLimit int
	Registry  prometheus.Registerer // nil: metrics are not exported
	Now       func() time.Time      // nil: time.Now
	// Audit receives every decision a person makes: mute, unmute, kill,
	// revive. Nil records nothing.
	Audit func(audit.Record)
}

// Rule is what holds for one agent.
type Rule struct {
	Agent      string    `json:"agent"` // NAME@PEER_ID
	Muted      bool      `json:"muted"`
	MutedUntil time.Time `json:"muted_until,omitzero"` // zero: until unmuted
	Killed     bool      `json:"killed"`
	By         string    `json:"by"` // who decided last
	At         time.Time `json:"at"` // when
}

// Service decides which agents may post and whose events are hidden.
type Service struct {
	cfg Config
	now func() time.Time

	refused *prometheus.CounterVec // reason: muted, killed, rate

	mu      sync.Mutex // protects rules and limits
	rules   map[string]Rule
	limits  map[identity.AgentName]*rate.Limiter
	perTick rate.Limit
	// pruned is when limits last lost its full buckets, pruneAt the size
	// at which it does before a minute has passed (see prune).
	pruned  time.Time
	pruneAt int
}

// minPruneAt is the fewest post limits that make a pass over them before a
// minute has passed since the last.
const minPruneAt = 1024

// New returns a service with the rules kept in the store.
func New(cfg Config) (*Service, error) {
	if cfg.Self == "" {
		return nil, fmt.Errorf("%w: Self is required", ErrBadConfig)
	}
	if cfg.PostLimit == 0 {
		cfg.PostLimit = DefaultPostLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Service{cfg: cfg, now: cfg.Now, rules: make(map[string]Rule), limits: make(map[identity.AgentName]*rate.Limiter)}
	s.perTick = rate.Limit(float64(cfg.PostLimit) / 60)
	s.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_agent_posts_refused_total",
		Help: "Posts and asks of this node's agents refused, by reason (muted, killed, rate: over the per-agent limit).",
	}, []string{"reason"})
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(s.refused); err != nil {
			return nil, fmt.Errorf("moderation: metrics: %w", err)
		}
	}
	if cfg.Store != nil {
		var bad error
		err := cfg.Store.ScanFrom(schema.ModerationPrefix(), nil, false, func(k, v []byte) bool {
			var r Rule
			if err := json.Unmarshal(v, &r); err != nil {
				bad = fmt.Errorf("moderation: record %q: %w", k, err)
				return false
			}
			s.rules[r.Agent] = r
			return true
		})
		if err == nil {
			err = bad
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Addr is the address of an agent: NAME@PEER_ID as given, or NAME of this
// node.
func (s *Service) Addr(agent string) (identity.AgentAddr, error) {
	a, err := identity.ParseGivenAgentAddr(agent)
	if err != nil {
		return identity.AgentAddr{}, fmt.Errorf("%w: %q is not an agent (NAME, or NAME@PEER_ID): %v", ErrBadInput, agent, err)
	}
	if a.Peer == "" {
		a.Peer = s.cfg.Self
	}
	return a, nil
}

// Mute mutes an agent for d (0: until unmuted). An agent of this node can
// post nothing while muted; another node's agent is hidden from this
// node's agents.
func (s *Service) Mute(agent string, d time.Duration, by string) (Rule, error) {
	a, err := s.Addr(agent)
	if err != nil {
		return Rule{}, err
	}
	if err := s.notTheUser(a, "muted"); err != nil {
		return Rule{}, err
	}
	if d < 0 || d > MaxMute {
		return Rule{}, fmt.Errorf("%w: mute for %s: give 1s to %s, or nothing for until unmuted", ErrBadInput, d, MaxMute)
	}
	now := s.now()
	detail := map[string]string{}
	r, err := s.update(a.String(), func(r *Rule) {
		r.Muted, r.MutedUntil, r.By, r.At = true, time.Time{}, by, now
		if d > 0 {
			r.MutedUntil = now.Add(d).UTC().Truncate(time.Millisecond)
			detail["until"] = r.MutedUntil.Format(time.RFC3339)
		}
	})
	if err != nil {
		return Rule{}, err
	}
	s.record(by, audit.AgentMute, a.String(), detail)
	return r, nil
}

// Unmute lifts a mute.
func (s *Service) Unmute(agent, by string) (Rule, error) {
	a, err := s.Addr(agent)
	if err != nil {
		return Rule{}, err
	}
	if r, ok := s.Rule(a.String()); !ok || !r.Muted {
		return Rule{}, fmt.Errorf("%w: %s is not muted", ErrNotFound, a)
	}
	r, err := s.update(a.String(), func(r *Rule) { r.Muted, r.MutedUntil, r.By, r.At = false, time.Time{}, by, s.now() })
	if err != nil {
		return Rule{}, err
	}
	s.record(by, audit.AgentUnmute, a.String(), nil)
	return r, nil
}

// Kill refuses every post of one of this node's agents until Revive. The
// caller ends its registration and session binding.
func (s *Service) Kill(name, by string) (Rule, error) {
	a, err := s.local(name)
	if err != nil {
		return Rule{}, err
	}
	if err := s.notTheUser(a, "killed"); err != nil {
		return Rule{}, err
	}
	r, err := s.update(a.String(), func(r *Rule) { r.Killed, r.By, r.At = true, by, s.now() })
	if err != nil {
		return Rule{}, err
	}
	s.record(by, audit.AgentKill, a.String(), nil)
	return r, nil
}

// Revive undoes Kill: the name may register and post again.
func (s *Service) Revive(name, by string) (Rule, error) {
	a, err := s.local(name)
	if err != nil {
		return Rule{}, err
	}
	if r, ok := s.Rule(a.String()); !ok || !r.Killed {
		return Rule{}, fmt.Errorf("%w: %s was not killed", ErrNotFound, a.Name)
	}
	r, err := s.update(a.String(), func(r *Rule) { r.Killed, r.By, r.At = false, by, s.now() })
	if err != nil {
		return Rule{}, err
	}
	s.record(by, ActionRevive, a.String(), nil)
	return r, nil
}

// notTheUser refuses a rule on this node's human, the user: it would shut
// them out of every room with no agent to undo it from but themselves.
// Another node's human may be muted (its events are hidden here).
func (s *Service) notTheUser(a identity.AgentAddr, what string) error {
	if a.Peer == s.cfg.Self && a.Name == identity.HumanAgent {
		return fmt.Errorf("%w: %s is you, the user of this node: it cannot be %s (mute or kill an agent)", ErrBadInput, identity.HumanAgent, what)
	}
	return nil
}

func (s *Service) local(name string) (identity.AgentAddr, error) {
	a, err := s.Addr(name)
	if err != nil {
		return a, err
	}
	if a.Peer != s.cfg.Self {
		return a, fmt.Errorf("%w: %s is another node's agent: kill and revive are for this node's agents (mute hides another's)", ErrBadInput, a)
	}
	return a, nil
}

// update changes the rule of addr and stores it (or drops it once nothing
// holds).
func (s *Service) update(addr string, f func(*Rule)) (Rule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rules[addr]
	r.Agent = addr
	f(&r)
	op := schema.Op{Key: schema.Moderation(addr)}
	if !r.Muted && !r.Killed {
		op.Delete = true
	} else {
		raw, err := json.Marshal(r)
		if err != nil {
			return Rule{}, err
		}
		op.Val = raw
	}
	if s.cfg.Store != nil {
		if err := s.cfg.Store.Apply([]schema.Op{op}, true); err != nil {
			return Rule{}, fmt.Errorf("moderation: keep the rule of %s: %w", addr, err)
		}
	}
	if op.Delete {
		delete(s.rules, addr)
	} else {
		s.rules[addr] = r
	}
	return r, nil
}

func (s *Service) record(by, action, subject string, detail map[string]string) {
	if s.cfg.Audit != nil {
		s.cfg.Audit(audit.Record{Actor: by, Action: action, Subject: subject, Detail: detail})
	}
}

// Rule returns what holds for addr (NAME@PEER_ID) now; ok is false when
// nothing does. A timed mute that ran out does not hold.
func (s *Service) Rule(addr string) (Rule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rules[addr]
	if !ok {
		return Rule{}, false
	}
	if r.Muted && !r.MutedUntil.IsZero() && !s.now().Before(r.MutedUntil) {
		r.Muted, r.MutedUntil = false, time.Time{}
	}
	return r, r.Muted || r.Killed
}

// List returns the rules that hold, by address.
func (s *Service) List() []Rule {
	s.mu.Lock()
	addrs := make([]string, 0, len(s.rules))
	for a := range s.rules {
		addrs = append(addrs, a)
	}
	s.mu.Unlock()
	sort.Strings(addrs)
	out := []Rule{}
	for _, a := range addrs {
		if r, ok := s.Rule(a); ok {
			out = append(out, r)
		}
	}
	return out
}

// Killed reports whether this node's agent name is killed.
func (s *Service) Killed(name identity.AgentName) bool {
	r, ok := s.Rule(string(name) + "@" + s.cfg.Self.String())
	return ok && r.Killed
}

// Muted reports whether this node's agent name is muted now.
func (s *Service) Muted(name identity.AgentName) bool {
	r, ok := s.Rule(string(name) + "@" + s.cfg.Self.String())
	return ok && r.Muted
}

// Hidden reports whether the events of the agent at addr (NAME@PEER_ID)
// are kept from this node's agents: another node's agent that is muted.
func (s *Service) Hidden(addr string) bool {
	r, ok := s.Rule(addr)
	return ok && r.Muted
}

// CheckPost is asked before one of this node's agents posts a message, an
// ask or a claim on a board (or opens a room, invites): it returns an error that says why when the agent is killed,
// muted, or over its limit (a post within the limit is counted).
func (s *Service) CheckPost(name identity.AgentName) error { return s.checkPost(name, true) }

// MayPost is CheckPost without counting the post: it is asked before a
// post that may yet be refused for another reason (a claim the board finds
// in conflict, or bad), and Posted counts it once it is made. Before, a
// claim was counted before the board checked it, so refused claims used up
// the limit; now only the claims posted count.
func (s *Service) MayPost(name identity.AgentName) error { return s.checkPost(name, false) }

// Posted counts a post MayPost let through and that was then made. Posts
// made in parallel after their MayPost may take the bucket below empty:
// the next post waits for them.
func (s *Service) Posted(name identity.AgentName) {
	if s.cfg.PostLimit < 0 {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	// A reservation takes the token even below empty (posts made in
	// parallel): the post was made, and the next one waits for it.
	s.limiter(name, now).ReserveN(now, 1)
}

// limiter returns the post limit of name. The caller holds s.mu.
func (s *Service) limiter(name identity.AgentName, now time.Time) *rate.Limiter {
	s.prune(now)
	l := s.limits[name]
	if l == nil {
		l = rate.NewLimiter(s.perTick, s.cfg.PostLimit)
		s.limits[name] = l
	}
	return l
}

func (s *Service) checkPost(name identity.AgentName, count bool) error {
	addr := string(name) + "@" + s.cfg.Self.String()
	if r, ok := s.Rule(addr); ok {
		switch {
		case r.Killed:
			s.refused.WithLabelValues("killed").Inc()
			return fmt.Errorf("%w: agent %s was killed by this node's user (parley agent kill): its posts and asks are refused until `parley agent revive %s`",
				ErrKilled, name, name)
		case r.MutedUntil.IsZero():
			s.refused.WithLabelValues("muted").Inc()
			return fmt.Errorf("%w: agent %s is muted by this node's user (parley agent mute): its posts and asks are refused until `parley agent unmute %s`",
				ErrMuted, name, name)
		default:
			s.refused.WithLabelValues("muted").Inc()
			return fmt.Errorf("%w: agent %s is muted by this node's user until %s (%s from now): its posts and asks are refused until then",
				ErrMuted, name, r.MutedUntil.Local().Format(time.RFC3339), r.MutedUntil.Sub(s.now()).Round(time.Second))
		}
	}
	if s.cfg.PostLimit < 0 {
		return nil
	}
	now := s.now()
	s.mu.Lock()
	l := s.limiter(name, now)
	var ok bool
	if count {
		ok = l.AllowN(now, 1)
	} else {
		ok = l.TokensAt(now) >= 1
	}
	var wait time.Duration
	if !ok && s.perTick > 0 {
		wait = time.Duration((1 - l.TokensAt(now)) / float64(s.perTick) * float64(time.Second))
	}
	s.mu.Unlock()
	if !ok {
		s.refused.WithLabelValues("rate").Inc()
		return fmt.Errorf("%w: agent %s posted more than %d times in a minute (messages, asks, claims, rooms opened and invites: this node's agent_post_limit); wait %s and post less often",
			ErrRateLimited, name, s.cfg.PostLimit, roundUp(wait))
	}
	return nil
}

// prune drops the post limits that are full again: a full bucket is the
// same as a new one, so the limits behave as before, and a limit is kept
// only while its agent has posted in about the last minute (any name the
// local API was called with gets one). It makes a pass once a minute, or
// sooner when the map has doubled since the last pass, so its cost spread
// over the posts stays constant. The caller holds s.mu.
func (s *Service) prune(now time.Time) {
	if len(s.limits) < s.pruneAt && now.Sub(s.pruned) < time.Minute && !now.Before(s.pruned) {
		return
	}
	full := float64(s.cfg.PostLimit)
	for name, l := range s.limits {
		if l.TokensAt(now) >= full {
			delete(s.limits, name)
		}
	}
	s.pruned, s.pruneAt = now, max(minPruneAt, 2*len(s.limits))
}

func roundUp(d time.Duration) string {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.Itoa(s) + "s"
}
