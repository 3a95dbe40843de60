package usage

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Other is the label value of the agents and rooms past the cap.
const Other = "other"

// DefaultMaxLabels is the cap on label values of one kind (agents, rooms).
const DefaultMaxLabels = 64

// History is how many intervals of message counts Snapshot keeps.
const History = 60

// DefaultInterval is the length of one interval of the history.
const DefaultInterval = 10 * time.Second

// Config configures a Meter. Zero values are documented.
type Config struct {
	// Registry receives the series; nil exports none.
	Registry prometheus.Registerer
	// MaxLabels caps the label values of agents and of rooms, each; zero
	// means DefaultMaxLabels.
	MaxLabels int
	// Interval is the length of one interval of the history; zero means
	// DefaultInterval.
	Interval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Counts is the usage of one agent or room.
type Counts struct {
	Name         string  `json:"name"`
	Messages     uint64  `json:"messages"` // messages and asks posted
	Bytes        uint64  `json:"bytes"`    // of their text
	AsksMade     uint64  `json:"asks_made"`
	AsksAnswered uint64  `json:"asks_answered"`
	AnswerSecs   float64 `json:"answer_seconds_avg"` // mean time from ask to answer; 0 without answers
	// Tokens and cost as the agent's client reported them; nil: unknown.
	TokensIn  *uint64  `json:"tokens_in"`
	TokensOut *uint64  `json:"tokens_out"`
	CostUSD   *float64 `json:"cost_usd"`
	// The part of TokensIn read from and written to a prompt cache, as
	// the client reported it; nil: unknown.
	CacheRead  *uint64 `json:"cache_read_tokens"`
	CacheWrite *uint64 `json:"cache_write_tokens"`

	answerSum float64
}

// Snapshot is the usage so far, for display.
type Snapshot struct {
	Agents []Counts `json:"agents"`
	Rooms  []Counts `json:"rooms"`
	// Recent counts messages per interval, oldest first, the last one the
	// interval under way.
	Recent          []uint64 `json:"recent"`
	IntervalSeconds float64  `json:"interval_seconds"`
}

// Meter counts usage. Its methods are safe for concurrent use; a nil
// *Meter counts nothing.
type Meter struct {
	cfg Config

	mu       sync.Mutex // protects the fields below
	agents   map[string]*Counts
	rooms    map[string]*Counts
	recent   [History]uint64
	recentAt int64 // the interval number of recent's last slot

	msgs, bytes, asks, answers    *prometheus.CounterVec // by kind ("agent"/"room") label
	roomMsgs, roomBytes, roomAsks *prometheus.CounterVec
	roomAnswers                   *prometheus.CounterVec
	latency, roomLatency          *prometheus.HistogramVec
	tokens, cache                 *prometheus.CounterVec
	cost                          *prometheus.CounterVec
}

// New returns a Meter and registers its series.
func New(cfg Config) *Meter {
	if cfg.MaxLabels <= 0 {
		cfg.MaxLabels = DefaultMaxLabels
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Meter{cfg: cfg, agents: map[string]*Counts{}, rooms: map[string]*Counts{}}
	counter := func(name, help, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	}
	buckets := []float64{1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600}
	m.msgs = counter("parley_agent_messages_total", "Messages and asks posted by the node's agents, by agent.", "agent")
	m.bytes = counter("parley_agent_message_bytes_total", "Bytes of text posted by the node's agents, by agent.", "agent")
	m.asks = counter("parley_agent_asks_total", "Asks made by the node's agents, by agent.", "agent")
	m.answers = counter("parley_agent_answers_total", "Asks answered by the node's agents (the first reply to each), by agent.", "agent")
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "parley_agent_answer_seconds",
		Help: "Time from an ask to its answer by the node's agents, by answering agent.", Buckets: buckets}, []string{"agent"})
	m.roomMsgs = counter("parley_room_messages_total", "Messages and asks posted by the node's agents, by room.", "room")
	m.roomBytes = counter("parley_room_message_bytes_total", "Bytes of text posted by the node's agents, by room.", "room")
	m.roomAsks = counter("parley_room_asks_total", "Asks made by the node's agents, by room.", "room")
	m.roomAnswers = counter("parley_room_answers_total", "Asks answered by the node's agents, by room.", "room")
	m.roomLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "parley_room_answer_seconds",
		Help: "Time from an ask to its answer by the node's agents, by room.", Buckets: buckets}, []string{"room"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_agent_tokens_total",
		Help: "Tokens the node's agents' clients reported, by agent and direction (in, out)."}, []string{"agent", "direction"})
	m.cache = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_agent_cache_tokens_total",
		Help: "Input tokens read from (read) or written to (write) a prompt cache, as the node's agents' clients reported them, by agent; part of parley_agent_tokens_total{direction=\"in\"}."}, []string{"agent", "kind"})
	m.cost = counter("parley_agent_cost_usd_total", "Cost in US dollars the node's agents' clients reported, by agent.", "agent")
	r := cfg.Registry
	m.msgs, m.bytes, m.asks, m.answers = register(r, m.msgs), register(r, m.bytes), register(r, m.asks), register(r, m.answers)
	m.roomMsgs, m.roomBytes, m.roomAsks, m.roomAnswers = register(r, m.roomMsgs), register(r, m.roomBytes), register(r, m.roomAsks), register(r, m.roomAnswers)
	m.latency, m.roomLatency = register(r, m.latency), register(r, m.roomLatency)
	m.tokens, m.cache, m.cost = register(r, m.tokens), register(r, m.cache), register(r, m.cost)
	return m
}

// register adds c to r (none when r is nil). A node restarted on the same
// registry keeps counting into the series already there.
func register[C prometheus.Collector](r prometheus.Registerer, c C) C {
	if r == nil {
		return c
	}
	if err := r.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old
			}
		}
	}
	return c
}

// slot returns the counts of name in set, or those of Other past the cap.
// It is called with m.mu held.
func (m *Meter) slot(set map[string]*Counts, name string) *Counts {
	if c, ok := set[name]; ok {
		return c
	}
	if len(set) >= m.cfg.MaxLabels {
		name = Other
		if c, ok := set[name]; ok {
			return c
		}
	}
	c := &Counts{Name: name}
	set[name] = c
	return c
}

// tick moves the history on to now. It is called with m.mu held.
func (m *Meter) tick() {
	now := m.cfg.Now().UnixNano() / int64(m.cfg.Interval)
	if m.recentAt == 0 {
		m.recentAt = now
		return
	}
	shift := now - m.recentAt
	if shift <= 0 {
		return
	}
	if shift >= History {
		m.recent = [History]uint64{}
	} else {
		copy(m.recent[:], m.recent[shift:])
		clear(m.recent[History-shift:])
	}
	m.recentAt = now
}

// Posted counts a message (an ask when ask is set) of size bytes by agent in
// room.
func (m *Meter) Posted(agent, room string, size int, ask bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	a, r := m.slot(m.agents, agent), m.slot(m.rooms, room)
	for _, c := range []*Counts{a, r} {
		c.Messages++
		c.Bytes += uint64(size)
		if ask {
			c.AsksMade++
		}
	}
	m.tick()
	m.recent[History-1]++
	al, rl := a.Name, r.Name
	m.mu.Unlock()
	m.msgs.WithLabelValues(al).Inc()
	m.bytes.WithLabelValues(al).Add(float64(size))
	m.roomMsgs.WithLabelValues(rl).Inc()
	m.roomBytes.WithLabelValues(rl).Add(float64(size))
	if ask {
		m.asks.WithLabelValues(al).Inc()
		m.roomAsks.WithLabelValues(rl).Inc()
	}
}

// Answered counts agent's answer in room to an ask made latency ago.
func (m *Meter) Answered(agent, room string, latency time.Duration) {
	if m == nil {
		return
	}
	secs := max(latency.Seconds(), 0)
	m.mu.Lock()
	a, r := m.slot(m.agents, agent), m.slot(m.rooms, room)
	for _, c := range []*Counts{a, r} {
		c.AsksAnswered++
		c.answerSum += secs
	}
	al, rl := a.Name, r.Name
	m.mu.Unlock()
	m.answers.WithLabelValues(al).Inc()
	m.roomAnswers.WithLabelValues(rl).Inc()
	m.latency.WithLabelValues(al).Observe(secs)
	m.roomLatency.WithLabelValues(rl).Observe(secs)
}

// Spent adds what agent's client reported: tokens in and out, and cost in
// US dollars. A negative value means the client did not tell it.
func (m *Meter) Spent(agent string, in, out int64, costUSD float64) {
	if m == nil || (in < 0 && out < 0 && costUSD < 0) {
		return
	}
	m.mu.Lock()
	a := m.slot(m.agents, agent)
	add := func(p **uint64, v int64) {
		if v < 0 {
			return
		}
		if *p == nil {
			*p = new(uint64)
		}
		**p += uint64(v)
	}
	add(&a.TokensIn, in)
	add(&a.TokensOut, out)
	if costUSD >= 0 {
		if a.CostUSD == nil {
			a.CostUSD = new(float64)
		}
		*a.CostUSD += costUSD
	}
	al := a.Name
	m.mu.Unlock()
	if in >= 0 {
		m.tokens.WithLabelValues(al, "in").Add(float64(in))
	}
	if out >= 0 {
		m.tokens.WithLabelValues(al, "out").Add(float64(out))
	}
	if costUSD >= 0 {
		m.cost.WithLabelValues(al).Add(costUSD)
	}
}

// Cached adds the part of agent's input tokens its client reported as read
// from and written to a prompt cache. A negative value means the client did
// not tell it.
func (m *Meter) Cached(agent string, read, write int64) {
	if m == nil || (read < 0 && write < 0) {
		return
	}
	m.mu.Lock()
	a := m.slot(m.agents, agent)
	for _, f := range []struct {
		p *(*uint64)
		v int64
	}{{&a.CacheRead, read}, {&a.CacheWrite, write}} {
		if f.v < 0 {
			continue
		}
		if *f.p == nil {
			*f.p = new(uint64)
		}
		**f.p += uint64(f.v)
	}
	al := a.Name
	m.mu.Unlock()
	if read >= 0 {
		m.cache.WithLabelValues(al, "read").Add(float64(read))
	}
	if write >= 0 {
		m.cache.WithLabelValues(al, "write").Add(float64(write))
	}
}

// Snapshot returns the usage so far, agents and rooms by name.
func (m *Meter) Snapshot() Snapshot {
	if m == nil {
		return Snapshot{Agents: []Counts{}, Rooms: []Counts{}, Recent: []uint64{}}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tick()
	list := func(set map[string]*Counts) []Counts {
		out := make([]Counts, 0, len(set))
		for _, c := range set {
			v := *c
			if v.AsksAnswered > 0 {
				v.AnswerSecs = v.answerSum / float64(v.AsksAnswered)
			}
			if v.TokensIn != nil {
				n := *v.TokensIn
				v.TokensIn = &n
			}
			if v.TokensOut != nil {
				n := *v.TokensOut
				v.TokensOut = &n
			}
			if v.CostUSD != nil {
				n := *v.CostUSD
				v.CostUSD = &n
			}
			for _, p := range []*(*uint64){&v.CacheRead, &v.CacheWrite} {
				if *p != nil {
					n := **p
					*p = &n
				}
			}
			out = append(out, v)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out
	}
	return Snapshot{Agents: list(m.agents), Rooms: list(m.rooms), Recent: append([]uint64(nil), m.recent[:]...),
		IntervalSeconds: m.cfg.Interval.Seconds()}
}
