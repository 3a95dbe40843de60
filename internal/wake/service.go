package wake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/manual"
	"github.com/parley-mesh/parley/internal/turns"
	"github.com/parley-mesh/parley/internal/wake/tmux"
)

// Inbox is what the service reads of an agent's items.
type Inbox interface {
	// Peek returns the agent's pending items, handing out nothing.
	Peek(ctx context.Context, agent string) (localapi.Pending, error)
}

// Unreader is an Inbox that lists the owed items an agent has not read,
// bounded by their count, not their texts' size (localapi.Unread): the
// service reads them through it when its Inbox has it. Through Peek alone
// it sees only a take's budget-bound list, where one long ask hides the
// others, and an item left out for want of room looks read.
type Unreader interface {
	Unread(ctx context.Context, agent string, max int, check []string) (localapi.Unread, error)
}

// MaxItems is the most owed items not yet read the service keeps of one
// agent (Unreader), chosen in turns by asking node: a node's flood of
// 1,500 asks keeps it at this many, and leaves room for another node's.
const MaxItems = 256

// Config configures a Service.
type Config struct {
	// Inbox gives the agents' items. Required.
	Inbox Inbox
	// Changes signals new events in any room (rooms.Manager.Changes).
	// Required.
	Changes func() (<-chan struct{}, func())
	// Agents lists the node's live agents. Nil means none (only agents
	// with routes are watched).
	Agents func() []string
	// Heartbeat keeps an agent with a live terminal route registered, and
	// gives what its screen shows it doing: "busy" or "idle" ("" when that
	// is not known). It is called every HeartbeatEvery while the pane
	// lives, whatever the route is delivering, and at once when the state
	// changes. session is the route's session key ("" if none). An error
	// that wraps ErrUnregistered says the agent is not registered any more
	// by that session (swept, its session took another name, or another
	// session took the name): the route binds its session again through
	// Rebind. Nil means none; AgentHeartbeat is the node's.
	Heartbeat func(ctx context.Context, agent, session, state string) error
	// Rebind binds a terminal route's session key to its agent again and
	// registers it, when a heartbeat finds the agent unregistered while its
	// pane lives. When the session now holds another name, the route moves
	// to that name, unless the pane is gone by then (the route goes, its
	// new name let go through TerminalGone), the name's route is another
	// session's pane whose program runs and whose session is still bound to
	// the name (this route ends: ErrRouteTaken), or tmux does not answer
	// (the route stays, and tries again at its next beat). Nil means the
	// route does not bind again.
	Rebind Rebind
	// SessionAgent gives the name a session key is bound to, whether or
	// not it is registered now ("" for none). A move of a terminal route to
	// its session's new name replaces that name's route when its pane is
	// another session's that took another name itself (a name swap): that
	// route is the other name's now, and moves there at its next beat. Nil
	// takes every session for bound to the name its route is under.
	SessionAgent func(ctx context.Context, session string) (string, error)
	// HeartbeatEvery is how often a terminal route heartbeats its agent.
	// Zero means 15 s (`parley run` registers it with a TTL of 60 s).
	HeartbeatEvery time.Duration
	// Terminals keeps the terminal routes across restarts (Restore reads
	// them back). Nil keeps them in memory only.
	Terminals Store
	// RestoreRetry is how long Restore waits before it tries again the
	// kept routes tmux did not answer for; the wait doubles after each try.
	// Zero means 15 s.
	RestoreRetry time.Duration
	// TerminalGone is told when the program of an agent's terminal route
	// exited or its pane closed, with the session key the route was bound
	// with, so that the agent it kept registered is let go. Nil means
	// nothing is done.
	TerminalGone func(ctx context.Context, agent, session string)
	// PaneCheck is how often a terminal route looks at its pane: whether it
	// still lives, and what its program is doing. Zero means 2 s.
	PaneCheck time.Duration
	// Quiet reports an agent the node must not wake (its person muted or
	// killed it). Nil means none.
	Quiet func(agent string) bool
	// Self is the node's peer ID, for agents' addresses in wake texts.
	Self string
	// WakeBudget is how many unanswered wake-ups one asking node's items
	// may cause an agent within WakeWindow: a wake-up stands while the
	// agent still owes one of the items it handed (an ask not answered nor
	// dismissed, read or not; an invitation not taken). Past it, that
	// node's items wake the agent no more (they ride in its tool results)
	// and its human is told. The budget comes back as the agent answers
	// what those wake-ups handed, or as they age past WakeWindow. The node's own
	// agents (Self) have none: they are the person's own, and bounded by
	// the node's post limit. Zero means 3; negative means no budget.
	WakeBudget int
	// WakeWindow: see WakeBudget. Zero means 10 minutes.
	WakeWindow time.Duration
	// Limit is how long a route has to get an item read before the next
	// one tries (and, with none left, the human is told). Zero means 60 s.
	Limit time.Duration
	// Recheck is how often items handed out are looked at again without a
	// change in the rooms. Zero means 1 s.
	Recheck time.Duration
	// InviteHold is how long a new invitation waits before it is handed
	// to a route: an ask of an agent not in the room invites it, then
	// asks, and the ask carries the invitation (one item, one paste) when
	// it comes within this time. Zero means 2 s; it is waited out at the
	// next recheck after it.
	InviteHold time.Duration
	// Terminal tunes idle detection in tmux panes (Prompt is set per
	// pane); TmuxBin is the tmux program ("" means tmux on PATH).
	Terminal tmux.Options
	TmuxBin  string
	// Named writes the agent addresses of a text as people read them
	// (NAME@handle); nil leaves them NAME@PEER_ID.
	Named func(string) string
	// Logger; nil discards.
	Logger *slog.Logger
	// Registry receives the metrics; nil means none.
	Registry prometheus.Registerer
}

// order is the kinds of route, in the order they are tried.
var order = []string{localapi.WakeStop, localapi.WakeAppServer, localapi.WakeChannel, localapi.WakeTerminal}

// Service wakes agents for the items they owe. See the package comment.
type Service struct {
	cfg  Config
	log  *slog.Logger
	ops  chan func(ctx context.Context)
	done chan struct{} // closed when Run returns

	attempts *prometheus.CounterVec
	told     prometheus.Counter

	// Owned by Run's goroutine.
	agents map[string]*agentState
	nextID uint64
	// seq numbers the waiter routes and the sessions' busy calls (ended),
	// in the order they came; it starts at the clock, so that a waiter
	// that waits again across a restart of the node does not take the
	// new run's numbers for older than its own.
	seq uint64
	// unlisted holds the terminal routes a move of another pane took off
	// their name, whose session had taken another name: they are no
	// agent's route, and run on until they move to their session's name
	// (or their pane goes, or they are forgotten).
	unlisted map[*route]bool
}

type agentState struct {
	routes []*route
	// ended is, per kind and session of waiter route, the last thing that
	// ends the routes of that session and kind registered before it: a
	// newer waiter's registration, or (stop) the session working again. A
	// waiter that waits again after one of these came since its previous
	// route is superseded at once (WakeWaitRequest.After), unless it is a
	// registration of its own (the same WakeWaitRequest.Waiter): a wait
	// whose answer it never got. At most maxEnded sessions are kept, the
	// newest.
	ended map[endKey]ending
	items map[string]*itemState
	// quiet: its person muted or killed it when it was last looked at.
	quiet bool
	// idle is when a session of the agent last said it is idle (Codex's
	// notify after a turn); zero once it works again or reads an item.
	idle time.Time
	// wakes holds, per asking node, the wake-ups its items caused (a batch
	// handed to a route) that stand: within Config.WakeWindow, and with an
	// item the agent still owes; the newest Config.WakeBudget of them.
	wakes map[string][]wakeUp
	// pastedKept are the items its terminal route's kept record says were
	// pasted (Saved.Pasted), as a restart takes the pane up again: they
	// count as pasted once evaluate sees them (then it is cleared).
	pastedKept map[string]bool
}

// wakeUp is a wake-up an asking node's items caused: when, and the IDs of
// its items it handed (at most maxWakeIDs).
type wakeUp struct {
	at  time.Time
	ids []string
}

// maxWakeIDs is the most item IDs a wakeUp keeps.
const maxWakeIDs = 64

// endKey names the waiter routes of one session and kind.
type endKey struct{ kind, session string }

// ending is what ended the routes of an endKey last: its seq, and the
// waiter's key (WakeWaitRequest.Waiter) when it is a waiter's
// registration that gave one ("" for a busy call).
type ending struct {
	seq    uint64
	waiter string
}

// keepEnded is how long what ended a waiter's route is kept for an agent
// that is not registered (forget): longer than two waits, the most a
// waiter spends between two (its answer, then its next wait).
const keepEnded = 2*localapi.MaxWait + time.Minute

// maxLingering is how many agents that are not registered keep what ended
// their waiters' routes (forget).
const maxLingering = 256

// maxEnded is how many sessions' ends an agent keeps (agentState.ended).
// A waiter of a session dropped from them waits again as if nothing had
// ended its previous route.
const maxEnded = 64

// next returns the next seq: later than every one before, and not before
// the clock.
func (s *Service) next() uint64 {
	s.seq = max(s.seq+1, uint64(time.Now().UnixNano()))
	return s.seq
}

// end records that what ends the routes of key registered before now came
// (a waiter's registration with its key, or a busy call: "").
func (st *agentState) end(key endKey, seq uint64, waiter string) {
	if st.ended == nil {
		st.ended = make(map[endKey]ending)
	}
	st.ended[key] = ending{seq, waiter}
	if len(st.ended) > maxEnded {
		oldest := key
		for k, e := range st.ended {
			if e.seq < st.ended[oldest].seq {
				oldest = k
			}
		}
		delete(st.ended, oldest)
	}
}

// lastEnded is the seq of the last thing that ended a waiter's route of
// the agent, 0 if none.
func (st *agentState) lastEnded() uint64 {
	var last uint64
	for _, e := range st.ended {
		last = max(last, e.seq)
	}
	return last
}

// stale reports whether a wait that names its previous answer's seq
// (after) and its waiter's key comes after what would have ended that
// route: another waiter's registration, or a busy call. The waiter's own
// registrations since are waits whose answer it never got; they end
// nothing of its own, and nothing else came after them (what came would
// be the last).
func (st *agentState) stale(key endKey, after uint64, waiter string) bool {
	e := st.ended[key]
	return after != 0 && e.seq > after && (waiter == "" || e.waiter != waiter)
}

type itemState struct {
	item    localapi.Item
	node    string // the asking node (the peer of From)
	first   time.Time
	tried   map[string]bool // route kinds it was handed to
	handed  time.Time       // when it was last handed to a route (zero: not in flight)
	told    bool            // the human was told
	lastTry time.Time       // when the last route had it
	// pasted: a terminal route pasted it whole into the agent's pane. A
	// terminal agent reads it there (it may have no Parley tool that would
	// mark it read): it is reached, handed to no route again, and its human
	// is not told.
	pasted bool
}

type route struct {
	id      uint64
	kind    string
	session string
	// Waiters: when the route was registered (Service.next), which its
	// answer gives (Wake.Seq).
	seq uint64
	// Waiters (stop, channel): the items go here, once.
	out chan localapi.Wake
	// Terminal: the items to paste go here while the pane's goroutine is
	// not delivering (busy).
	texts  chan []localapi.Item
	busy   bool
	cancel context.CancelFunc
	// Terminal: closed once the route's goroutines have returned.
	done chan struct{}
	// Terminal: the pane, its tmux server, its first process when the
	// route was made, and its prompt.
	pane, socket, prompt string
	pid                  int
	// Terminal: the prompt's pattern a person gave (or nil), and the
	// prompt line learned again in place of prompt (tmux.Options.Relearn).
	pattern   *regexp.Regexp
	relearned atomic.Pointer[string]
	// Terminal: idle is set while the watcher's last two looks found the
	// agent idle at its empty prompt (not in copy mode, no draft). An item
	// the route had and could not paste is handed to it again then.
	idle atomic.Bool
	// Terminal: the prompt line a paste was left on to a person
	// (tmux.ErrNotSent), until the watcher sees whether they sent it.
	unsent atomic.Pointer[unsentLine]
	// Terminal: kick makes its watcher look and beat at once.
	kick chan struct{}
	// Terminal: pasting ends (a paste under way stops) once this is done:
	// a move of another pane took the route off its name (Service.unlisted;
	// displaced is set then too).
	pasting   context.Context
	unlist    context.CancelFunc
	displaced atomic.Bool
	// Terminal: its pane was found gone (or its program exited) when the
	// route ended. Owned by Run's goroutine.
	gone bool
	// Terminal: the name its session took, once a move of the route to it
	// failed and waits to be tried again (watchTerminal); the route lets
	// that name go too when its pane goes.
	renamed atomic.Pointer[string]
}

// promptLine is a terminal route's empty prompt line: the one learned
// again, else the one it was made with.
func (r *route) promptLine() string {
	if p := r.relearned.Load(); p != nil {
		return *p
	}
	return r.prompt
}

// emptyPrompt says whether a cursor line (trailing blanks trimmed) is a
// terminal route's empty prompt.
func (r *route) emptyPrompt(line string) bool {
	if r.pattern != nil {
		return r.pattern.MatchString(line)
	}
	return line == strings.TrimRight(r.promptLine(), " ")
}

// request is what binds a terminal route's pane again.
func (r *route) request() localapi.TerminalRequest {
	req := localapi.TerminalRequest{Socket: r.socket, Pane: r.pane, Prompt: r.promptLine(), Session: r.session}
	if r.pattern != nil {
		req.Pattern = r.pattern.String()
	}
	return req
}

// saved is a terminal route's record for restarts, as agent's.
func (r *route) saved(agent string) Saved {
	req := r.request()
	return Saved{Agent: agent, Session: r.session, Socket: r.socket, Pane: r.pane, PID: r.pid, Prompt: req.Prompt, Pattern: req.Pattern}
}

// unsentLine is a paste left at the prompt to a person: the prompt line
// that showed it, and the items it held.
type unsentLine struct {
	line  string
	items []string
}

// New returns a Service; Run runs it.
func New(cfg Config) (*Service, error) {
	if cfg.Inbox == nil || cfg.Changes == nil {
		return nil, errors.New("wake: Inbox and Changes are required")
	}
	if cfg.Limit <= 0 {
		cfg.Limit = 60 * time.Second
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = time.Second
	}
	if cfg.WakeBudget == 0 {
		cfg.WakeBudget = 3
	}
	if cfg.WakeWindow <= 0 {
		cfg.WakeWindow = 10 * time.Minute
	}
	if cfg.InviteHold <= 0 {
		cfg.InviteHold = 2 * time.Second
	}
	if cfg.PaneCheck <= 0 {
		cfg.PaneCheck = 2 * time.Second
	}
	if cfg.HeartbeatEvery <= 0 {
		cfg.HeartbeatEvery = 15 * time.Second
	}
	if cfg.RestoreRetry <= 0 {
		cfg.RestoreRetry = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Agents == nil {
		cfg.Agents = func() []string { return nil }
	}
	s := &Service{
		cfg: cfg, log: cfg.Logger, ops: make(chan func(context.Context)), done: make(chan struct{}),
		agents: make(map[string]*agentState), unlisted: make(map[*route]bool),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_wake_attempts_total", Help: "Owed items handed to a wake-up route, by route kind.",
		}, []string{"route"}),
		told: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_wake_unreached_total", Help: "Owed items no route got read in time (the human was told).",
		}),
	}
	if cfg.Registry != nil {
		for _, c := range []prometheus.Collector{s.attempts, s.told} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, fmt.Errorf("wake: register metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Run serves until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	defer close(s.done)
	changes, stop := s.cfg.Changes()
	defer stop()
	tick := time.NewTicker(s.cfg.Recheck)
	defer tick.Stop()
	s.scan(ctx, true)
	for {
		select {
		case <-ctx.Done():
			for _, st := range s.agents {
				for _, r := range st.routes {
					if r.cancel != nil {
						r.cancel()
					}
				}
			}
			return nil
		case f := <-s.ops:
			f(ctx)
		case <-changes:
			s.scan(ctx, true)
		case <-tick.C:
			s.scan(ctx, false)
		}
	}
}

// do runs f on Run's goroutine and waits for it.
func (s *Service) do(ctx context.Context, f func(ctx context.Context)) error {
	ran := make(chan struct{})
	select {
	case s.ops <- func(ctx context.Context) { f(ctx); close(ran) }:
	case <-s.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ran:
		return nil
	case <-s.done:
		return ErrStopped
	}
}

func (s *Service) state(agent string) *agentState {
	st := s.agents[agent]
	if st == nil {
		st = &agentState{items: make(map[string]*itemState)}
		s.agents[agent] = st
	}
	return st
}

// scan looks at every watched agent: all live agents and those with
// routes when all is set (the rooms changed), else only those with items
// and those muted when last looked at.
func (s *Service) scan(ctx context.Context, all bool) {
	names := map[string]bool{}
	for a, st := range s.agents {
		if all || len(st.items) > 0 || st.quiet {
			names[a] = true
		}
	}
	if all {
		for _, a := range s.cfg.Agents() {
			names[a] = true
		}
	}
	for a := range names {
		s.evaluate(ctx, a)
	}
	s.forget()
}

// forget drops the state of every agent that is not registered and has
// nothing to keep: no route waiting, no item, not muted, and nothing that
// ended a waiter's route within keepEnded (a waiter between two waits
// still needs it to know it was superseded, while its agent's
// registration lapses for a moment) — of those only the maxLingering
// that ended one last. A name a client gave (a wait, a busy or idle call)
// that no agent holds is not kept for good, nor are more than
// maxLingering of them; a registered agent keeps all of it.
func (s *Service) forget() {
	var live map[string]bool
	recent := uint64(time.Now().Add(-keepEnded).UnixNano())
	type lingering struct {
		agent string
		last  uint64
	}
	var kept []lingering
	for a, st := range s.agents {
		if len(st.routes) > 0 || len(st.items) > 0 || st.quiet {
			continue
		}
		if live == nil {
			live = map[string]bool{}
			for _, n := range s.cfg.Agents() {
				live[n] = true
			}
		}
		if live[a] {
			continue
		}
		if last := st.lastEnded(); last > recent {
			kept = append(kept, lingering{a, last})
			continue
		}
		delete(s.agents, a)
	}
	if len(kept) > maxLingering {
		slices.SortFunc(kept, func(x, y lingering) int { return cmp.Compare(y.last, x.last) })
		for _, l := range kept[maxLingering:] {
			delete(s.agents, l.agent)
		}
	}
}

// owed is what counts as an owed item not yet read.
func owed(it localapi.Item) bool { return it.Kind == "ask" || it.Kind == "invitation" }

// evaluate brings an agent's items up to date and hands the new ones, and
// those whose route ran out of time, to the next route.
func (s *Service) evaluate(ctx context.Context, agent string) {
	st := s.state(agent)
	if s.cfg.Quiet != nil && s.cfg.Quiet(agent) {
		// Not woken, and nobody to tell: its person chose so. It is looked
		// at again on every recheck, so that what waits for it is brought
		// once it is unmuted (or the mute runs out).
		clear(st.items)
		st.quiet = true
		return
	}
	st.quiet = false
	var check []string
	for _, ws := range st.wakes {
		for _, w := range ws {
			check = append(check, w.ids...)
		}
	}
	u, err := s.unread(ctx, agent, check)
	if localapi.IsCode(err, localapi.CodeUnknownAgent) {
		// A name the node knows nothing of any more (not registered, in
		// no room, nothing pending): nothing waits for it.
		u, err = localapi.Unread{}, nil
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("wake: inbox not read", "agent", agent, "err", err)
		}
		return
	}
	now := time.Now()
	unread := map[string]localapi.Item{}
	// at is an item's place in the inbox's list: the order the asks came
	// to this node, not the date their sender wrote on them (a peer dates
	// its asks as it likes: by date, a member's asks dated an hour back
	// went first, the first of a wake text shown in full and one that came
	// before them a line at its end, or none).
	at := map[string]int{}
	for i, it := range u.Items {
		if owed(it) {
			unread[it.ID] = it
			at[it.ID] = i
		}
	}
	var absent []string
	for id, is := range st.items {
		if _, ok := unread[id]; ok {
			continue
		}
		if u.LeftOut > 0 {
			// Maybe only crowded out of the list (another node's ask took
			// its turn): kept, marks and all, and handed nothing.
			absent = append(absent, id)
			continue
		}
		if is.told {
			s.log.Info("owed item read after all", "agent", agent, "item", id)
		}
		delete(st.items, id)
		st.idle = time.Time{} // it read: it works
	}
	if len(absent) > MaxItems {
		// Memory stays bounded: those kept beyond it go (the oldest kept).
		slices.SortFunc(absent, func(x, y string) int { return st.items[x].first.Compare(st.items[y].first) })
		for _, id := range absent[:len(absent)-MaxItems] {
			delete(st.items, id)
		}
	}
	stillOwed := map[string]bool{}
	for _, id := range u.Owed {
		stillOwed[id] = true
	}
	for node, ws := range st.wakes {
		// A wake-up whose items were all answered (or that aged past the
		// window) gives its place in the budget back.
		ws = slices.DeleteFunc(ws, func(w wakeUp) bool {
			return now.Sub(w.at) >= s.cfg.WakeWindow || !slices.ContainsFunc(w.ids, func(id string) bool { return stillOwed[id] })
		})
		if len(ws) == 0 {
			delete(st.wakes, node)
			continue
		}
		st.wakes[node] = ws
	}
	var items []*itemState
	for id, it := range unread {
		is := st.items[id]
		if is == nil {
			is = &itemState{item: it, node: turns.Node(it.From), first: now, tried: map[string]bool{}}
			if st.pastedKept[id] {
				is.pasted = true
				is.tried[localapi.WakeTerminal] = true
			}
			st.items[id] = is
		}
		items = append(items, is)
	}
	st.pastedKept = nil
	sort.Slice(items, func(i, j int) bool { return at[items[i].item.ID] < at[items[j].item.ID] })
	// In turns by asking node, as a take chooses its asks: a wake text
	// shows its first item in full and a few more a line each, the others
	// only counted ("… and N more"), so in the order they came a node's
	// flood left another node's ask that came after it counted only.
	items = turns.Order(items, func(is *itemState) string { return is.node })
	batches := map[*route][]localapi.Item{}
	var picked []*route
	for _, is := range items {
		if is.pasted {
			continue
		}
		if is.item.Kind == "invitation" && len(is.tried) == 0 && now.Sub(is.first) < s.cfg.InviteHold {
			// An ask may follow at once that brought the agent in: the
			// inbox folds the invitation into it, and the agent gets the
			// ask alone. It is looked at again at the next recheck.
			continue
		}
		if !is.handed.IsZero() && now.Sub(is.handed) < s.cfg.Limit {
			continue // a route has it
		}
		is.handed = time.Time{}
		spent := s.spent(st, is.node)
		if spent {
			if !is.told {
				// Its node woke the agent WakeBudget times within the
				// window, unanswered: its items wake it no more for now
				// (they ride in the agent's tool results); its human is
				// told.
				is.told = true
				s.told.Inc()
				s.log.Warn("an agent has not read what it owes, and its asking node's wake-ups are spent: tell its human", "agent", agent,
					"item", is.item.ID, "kind", is.item.Kind, "from", is.item.From, "room", is.item.Room,
					"wakes", len(st.wakes[is.node]), "window", s.cfg.WakeWindow.String())
			}
			continue
		}
		if r := s.pick(st, is); r != nil {
			is.tried[r.kind] = true
			is.handed, is.lastTry = now, now
			if _, ok := batches[r]; !ok {
				picked = append(picked, r)
			}
			batches[r] = append(batches[r], is.item)
			continue
		}
		since := is.first
		if !is.lastTry.IsZero() {
			since = is.lastTry
		}
		// An idle agent that no route can reach any more will read nothing
		// by itself: its human is told at once.
		idleUnreachable := !st.idle.IsZero() && !s.reachable(st, is)
		if !is.told && (idleUnreachable || now.Sub(since) >= s.cfg.Limit) {
			is.told = true
			s.told.Inc()
			var tried []string
			for _, k := range order {
				if is.tried[k] {
					tried = append(tried, k)
				}
			}
			s.log.Warn("an agent has not read what it owes: tell its human", "agent", agent, "item", is.item.ID,
				"kind", is.item.Kind, "from", is.item.From, "room", is.item.Room, "routes_tried", strings.Join(tried, ","),
				"waiting", now.Sub(is.first).Round(time.Second).String(), "idle", idleUnreachable)
		}
		// A terminal counts as tried for good only once it pasted the item:
		// one that could not (its agent worked past the limit, a person
		// scrolled or had a draft at the prompt) has it again whenever its
		// watcher sees the agent idle at its empty prompt, however long
		// after. The terminal is the last kind of route: none is left to
		// try first. lastTry stays: such tries do not hold back telling the
		// human (once) when the routes' turns ran out.
		if r := s.idleTerminal(st, is); r != nil {
			is.handed = now
			if _, ok := batches[r]; !ok {
				picked = append(picked, r)
			}
			batches[r] = append(batches[r], is.item)
		}
	}
	for _, r := range picked {
		s.spend(st, batches[r], now)
		s.hand(st, r, batches[r])
	}
}

// unread reads the owed items agent has not read: through the Inbox's
// Unread when it has one, else what a peek lists.
func (s *Service) unread(ctx context.Context, agent string, check []string) (localapi.Unread, error) {
	if ur, ok := s.cfg.Inbox.(Unreader); ok {
		return ur.Unread(ctx, agent, MaxItems, check)
	}
	p, err := s.cfg.Inbox.Peek(ctx, agent)
	if err != nil {
		return localapi.Unread{}, err
	}
	return localapi.Unread{Items: p.Items}, nil
}

// spent reports whether node's items woke the agent WakeBudget times
// within WakeWindow, and it still owes something each of those wake-ups
// handed (evaluate drops the others).
func (s *Service) spent(st *agentState, node string) bool {
	return s.cfg.WakeBudget > 0 && node != s.cfg.Self && len(st.wakes[node]) >= s.cfg.WakeBudget
}

// spend records a wake-up of the agent for each asking node with items in
// a batch handed to a route.
func (s *Service) spend(st *agentState, items []localapi.Item, now time.Time) {
	if s.cfg.WakeBudget <= 0 {
		return
	}
	by := map[string][]string{}
	var nodes []string
	for _, it := range items {
		node := turns.Node(it.From)
		if node == s.cfg.Self {
			continue
		}
		if _, ok := by[node]; !ok {
			nodes = append(nodes, node)
		}
		if len(by[node]) < maxWakeIDs {
			by[node] = append(by[node], it.ID)
		}
	}
	for _, node := range nodes {
		if st.wakes == nil {
			st.wakes = map[string][]wakeUp{}
		}
		ws := append(st.wakes[node], wakeUp{at: now, ids: by[node]})
		if len(ws) > s.cfg.WakeBudget {
			ws = ws[len(ws)-s.cfg.WakeBudget:]
		}
		st.wakes[node] = ws
	}
}

// pick returns the first route, in kind order, the item was not handed to
// and that can take it now.
func (s *Service) pick(st *agentState, is *itemState) *route {
	for _, k := range order {
		if is.tried[k] {
			continue
		}
		for _, r := range st.routes {
			if r.kind == k && !r.busy {
				return r
			}
		}
	}
	return nil
}

// idleTerminal returns a terminal route the item was handed to before,
// not pasted, that is free and whose agent sits idle at its empty prompt.
func (s *Service) idleTerminal(st *agentState, is *itemState) *route {
	if !is.tried[localapi.WakeTerminal] || is.pasted {
		return nil
	}
	for _, r := range st.routes {
		if r.kind == localapi.WakeTerminal && !r.busy && r.idle.Load() {
			return r
		}
	}
	return nil
}

// reachable reports whether a route of a kind the item was not handed to
// is there (busy or not).
func (s *Service) reachable(st *agentState, is *itemState) bool {
	for _, r := range st.routes {
		if !is.tried[r.kind] {
			return true
		}
	}
	return false
}

// hand gives items to a route: a waiter gets them and is done; a terminal
// pastes them.
func (s *Service) hand(st *agentState, r *route, items []localapi.Item) {
	s.attempts.WithLabelValues(r.kind).Add(float64(len(items)))
	if r.kind == localapi.WakeTerminal {
		r.busy = true
		r.texts <- items // buffered; the route is not busy, so it is empty
		return
	}
	s.remove(st, r)
	r.out <- localapi.Wake{Items: items}
}

// remove drops a route from an agent.
func (s *Service) remove(st *agentState, r *route) {
	st.routes = slices.DeleteFunc(st.routes, func(x *route) bool { return x == r })
}

// WakeWait implements localapi.Waker: it registers a waiter route and
// waits for items for it.
func (s *Service) WakeWait(ctx context.Context, agent string, req localapi.WakeWaitRequest) (localapi.Wake, error) {
	if req.Kind != localapi.WakeStop && req.Kind != localapi.WakeChannel && req.Kind != localapi.WakeAppServer {
		return localapi.Wake{}, localapi.BadRequest("kind must be %q, %q or %q", localapi.WakeStop, localapi.WakeAppServer, localapi.WakeChannel)
	}
	if req.Session == "" || len(req.Session) > 256 {
		return localapi.Wake{}, localapi.BadRequest("a session key of 1 to 256 bytes is needed")
	}
	if len(req.Waiter) > 256 {
		return localapi.Wake{}, localapi.BadRequest("a waiter key is at most 256 bytes")
	}
	if agent == "" {
		return localapi.Wake{}, localapi.BadRequest("no agent")
	}
	wait := time.Duration(req.Seconds * float64(time.Second))
	if wait < 0 || wait > localapi.MaxWait {
		return localapi.Wake{}, localapi.BadRequest("wait must be 0 to %s", localapi.MaxWait)
	}
	r := &route{kind: req.Kind, session: req.Session, out: make(chan localapi.Wake, 1)}
	key := endKey{r.kind, r.session}
	stale := false
	err := s.do(ctx, func(ctx context.Context) {
		st := s.state(agent)
		after := req.After
		if after > s.seq {
			// An answer this run of the node never gave: one of a run
			// before, whose clock was ahead of this one's. Whatever
			// ended routes in this run came after it.
			after = 1
		}
		if st.stale(key, after, req.Waiter) {
			// A newer waiter or the session's busy call came between
			// this waiter's previous wait and this one: it would have
			// ended that route, so it ends this one.
			stale = true
			return
		}
		r.seq = s.next()
		st.end(key, r.seq, req.Waiter)
		for _, old := range slices.Clone(st.routes) {
			if old.kind == r.kind && old.session == r.session {
				s.remove(st, old)
				old.out <- localapi.Wake{Superseded: true}
			}
		}
		s.nextID++
		r.id = s.nextID
		st.routes = append(st.routes, r)
		s.evaluate(ctx, agent)
	})
	if err != nil {
		return localapi.Wake{}, err
	}
	if stale {
		return localapi.Wake{Superseded: true}, nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case w := <-r.out:
		w.Seq = r.seq
		return w, nil
	case <-timer.C:
	case <-ctx.Done():
	case <-s.done:
	}
	// Take the route out; it may have been handed items meanwhile.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s.do(rctx, func(context.Context) { s.remove(s.state(agent), r) }) //nolint:errcheck // a stopped service holds no route
	select {
	case w := <-r.out:
		w.Seq = r.seq
		return w, nil
	default:
	}
	return localapi.Wake{Seq: r.seq}, ctx.Err()
}

// WakeBusy implements localapi.Waker: the session works again, so its
// stop waiters end, and so does the next wait of one that is between two
// waits (WakeWaitRequest.After).
func (s *Service) WakeBusy(ctx context.Context, agent string, req localapi.SessionRef) error {
	if req.Session == "" || len(req.Session) > 256 {
		return localapi.BadRequest("a session key of 1 to 256 bytes is needed")
	}
	if agent == "" {
		return localapi.BadRequest("no agent")
	}
	return s.do(ctx, func(context.Context) {
		st := s.state(agent)
		st.end(endKey{localapi.WakeStop, req.Session}, s.next(), "")
		st.idle = time.Time{}
		for _, r := range slices.Clone(st.routes) {
			if r.kind == localapi.WakeStop && r.session == req.Session {
				s.remove(st, r)
				r.out <- localapi.Wake{Superseded: true}
			}
		}
	})
}

// WakeIdle implements localapi.Waker: a session of the agent finished its
// turn and waits for its person (Codex's notify). What the agent owes and
// no route can bring it is told to the human at once, without waiting for
// the limit; routes still there keep their turn.
func (s *Service) WakeIdle(ctx context.Context, agent string, req localapi.SessionRef) error {
	if req.Session == "" || len(req.Session) > 256 {
		return localapi.BadRequest("a session key of 1 to 256 bytes is needed")
	}
	if agent == "" {
		return localapi.BadRequest("no agent")
	}
	return s.do(ctx, func(ctx context.Context) {
		// What it read before it went idle (in its turn) must not end the
		// mark: bring the items up to date first.
		s.evaluate(ctx, agent)
		s.state(agent).idle = time.Now()
		s.evaluate(ctx, agent)
	})
}

// WakeTerminal implements localapi.Waker: the pane becomes the agent's
// terminal route (replacing one it had).
func (s *Service) WakeTerminal(ctx context.Context, agent string, req localapi.TerminalRequest) error {
	err := s.bindTerminal(ctx, agent, req, nil, "", nil)
	var le *localapi.Error
	switch {
	case err == nil, errors.As(err, &le), errors.Is(err, ErrStopped), ctx.Err() != nil:
		return err
	case errors.Is(err, tmux.ErrPaneDead):
		return localapi.Errorf(http.StatusGone, localapi.CodeBadRequest, "the program in tmux pane %s has exited", req.Pane)
	case errors.Is(err, context.DeadlineExceeded):
		return localapi.Errorf(http.StatusGatewayTimeout, localapi.CodeTimeout, "%v (try again)", err)
	}
	return localapi.Errorf(http.StatusNotFound, localapi.CodeBadRequest, "%v", err)
}

// lookFor is how long one tmux call that looks at a pane gets: a tmux that
// hangs (its process group is killed then) must not hold back a terminal
// route's heartbeat past the agent's TTL, nor its move to a new name.
func (s *Service) lookFor() time.Duration { return max(5*s.cfg.PaneCheck, time.Second) }

// inspect reads a pane's state, for at most lookFor.
func (s *Service) inspect(ctx context.Context, socket, pane string) (tmux.State, error) {
	lctx, cancel := context.WithTimeout(ctx, s.lookFor())
	defer cancel()
	st, err := tmux.Server{Socket: socket, Bin: s.cfg.TmuxBin}.Inspect(lctx, pane)
	switch {
	case err == nil:
		return st, nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return st, fmt.Errorf("tmux pane %s on %s: tmux did not answer within %s: %w", pane, socket, s.lookFor(), err)
	}
	return st, fmt.Errorf("tmux pane %s on %s: %w", pane, socket, err)
}

// errRouteEnded is returned when the route a move was to replace ended
// meanwhile (its pane went, or the user ended its agent).
var errRouteEnded = errors.New("wake: the terminal route ended before it moved")

// rival reports whether r is a terminal route a move of the pane of req
// does not simply replace: another pane, of another session.
func rival(r *route, req localapi.TerminalRequest) bool {
	return r.kind == localapi.WakeTerminal && (r.socket != req.Socket || r.pane != req.Pane) && r.session != req.Session
}

// bindTerminal makes the pane agent's terminal route (WakeTerminal). from,
// when not nil, is the pane's route under the name fromAgent, which its
// session left for agent: it is replaced in the same step, so that a move
// is whole or not at all (errRouteEnded when it has ended meanwhile). A
// move replaces a rival route of agent (another session's pane) when its
// pane is gone, or when its session is bound to another name now (it is
// taken off agent, and moves at its next beat: displace); while its
// program runs and its session is bound to agent, the move fails with
// ErrRouteTaken.
//
// restoring, when not nil, is the kept route Restore takes up: the bind is
// refused unless it is still kept as it was: errEnded when the user ended
// its agent meanwhile, errKeptChanged when another bind replaced it. The kept record is saved in the same step as
// the route is made (and, for a move, the old name's dropped), so that
// ForgetTerminal, which marks it ended in a step of its own, comes before
// both or after both.
func (s *Service) bindTerminal(ctx context.Context, agent string, req localapi.TerminalRequest, from *route, fromAgent string, restoring *Saved) error {
	if !filepath.IsAbs(req.Socket) || !strings.HasPrefix(req.Pane, "%") {
		return localapi.BadRequest("a tmux socket path and a pane ID (%%N) are needed")
	}
	if agent == "" {
		return localapi.BadRequest("no agent")
	}
	var pattern *regexp.Regexp
	if req.Pattern != "" {
		var err error
		if pattern, err = regexp.Compile(req.Pattern); err != nil {
			return localapi.BadRequest("the prompt's pattern: %v", err)
		}
	}
	st, err := s.inspect(ctx, req.Socket, req.Pane)
	switch {
	case err != nil:
		return err
	case st.Dead:
		return fmt.Errorf("the program in tmux pane %s has exited: %w", req.Pane, tmux.ErrPaneDead)
	}
	// A rival's pane is looked at outside Run's goroutine (tmux may take
	// its time); one bound meanwhile is refused below.
	var rivals []*route
	if from != nil {
		err = s.do(ctx, func(context.Context) {
			for _, old := range s.state(agent).routes {
				if rival(old, req) {
					rivals = append(rivals, old)
				}
			}
		})
		if err != nil {
			return err
		}
	}
	gone := map[*route]bool{}
	left := map[*route]string{} // rivals whose session took another name: that name
	for _, o := range rivals {
		ost, err := s.inspect(ctx, o.socket, o.pane)
		switch {
		case err == nil && !ost.Dead:
			// Its program runs: the name is its pane's while its session is
			// still bound to it (the registry gave it to this route's session
			// only because that session's registration had lapsed). A session
			// that took another name has left it (two agents swapped names,
			// and that route has not moved yet): its route moves at its next
			// beat, and this one takes the name now.
			name, err := s.sessionAgent(ctx, o.session, agent)
			switch {
			case err != nil:
				return fmt.Errorf("%s's terminal route is another session's pane, and which name that session is bound to is not known: %w", agent, err)
			case name == agent:
				return routeTaken(agent, o)
			case name == "":
				// Bound to no name (the user killed its agent): its route
				// cannot bind its session again, and goes.
				gone[o] = true
				continue
			}
			left[o] = name
		case err == nil, errors.Is(err, tmux.ErrNoPane), errors.Is(err, tmux.ErrNoServer):
			gone[o] = true // its own look drops it soon; this bind replaces it now
		default:
			return fmt.Errorf("%s's terminal route is another session's pane, and whether its program still runs is not known: %w", agent, err)
		}
	}
	o := s.cfg.Terminal
	// One line: a readline program keeps only the first line of a
	// multi-line paste; every program takes one line.
	o.Flatten = true
	// The Enter after a paste, sent whatever becomes of the route, gets as
	// long as a look: a route that ends (ForgetTerminal waits for it) must
	// not wait for good for a tmux that hangs there.
	o.EnterLimit = s.lookFor()
	if pattern != nil {
		o.Prompt = pattern
	} else {
		// A line learned from the program's first quiet screen, which may
		// have been a question it asked first: learned again once the
		// program waits at another line (tmux.Terminal).
		o.Prompt = regexp.MustCompile("^" + regexp.QuoteMeta(strings.TrimRight(req.Prompt, " ")) + "$")
		o.Relearn = true
	}
	// A pane respawned with another program (same pane ID) is not the
	// agent's: its looks and pastes check the first process.
	o.PID = st.PID
	term := tmux.Bind(tmux.Server{Socket: req.Socket, Bin: s.cfg.TmuxBin}, req.Pane, o)
	if o.Relearn {
		// The screen as the prompt was learned (`parley run` binds right
		// after): the prompt is learned again only at a line the cursor is
		// seen to come to since a look (tmux.Terminal), so the first look is
		// made now, not a PaneCheck later, when the person may have answered
		// the program's question already.
		lctx, cancel := context.WithTimeout(ctx, s.lookFor())
		term.Look(lctx) //nolint:errcheck // only what it saw counts; the watcher's looks tell the rest
		cancel()
	}
	r := &route{kind: localapi.WakeTerminal, texts: make(chan []localapi.Item, 1), pane: req.Pane, socket: req.Socket,
		prompt: req.Prompt, pattern: pattern, pid: st.PID, session: req.Session, done: make(chan struct{}), kick: make(chan struct{}, 1)}
	var taken *route
	ended := false
	var gave error
	err = s.do(ctx, func(ctx context.Context) {
		sst := s.state(agent)
		if restoring != nil && s.cfg.Terminals != nil {
			saved, err := s.cfg.Terminals.Terminals()
			switch {
			case err != nil:
				gave = err
				return
			case slices.ContainsFunc(saved, restoring.same):
			case slices.ContainsFunc(saved, func(t Saved) bool { e := *restoring; e.Ended = true; return t.same(e) }):
				gave = errEnded
				return
			default:
				gave = errKeptChanged
				return
			}
			if restoring.Agent == agent && len(restoring.Pasted) > 0 {
				// Pasted into this pane before the restart: on its screen.
				sst.pastedKept = map[string]bool{}
				for _, id := range restoring.Pasted {
					sst.pastedKept[id] = true
					if is := sst.items[id]; is != nil {
						is.pasted, is.told = true, false
						is.tried[localapi.WakeTerminal] = true
					}
				}
			}
		}
		if from != nil {
			for _, old := range sst.routes {
				_, hasLeft := left[old]
				if rival(old, req) && !gone[old] && !hasLeft {
					taken = old
					return
				}
			}
			fst := s.state(fromAgent)
			switch {
			case slices.Contains(fst.routes, from):
				s.remove(fst, from)
				for _, is := range fst.items {
					is.handed = time.Time{} // nothing reaches the old name now
				}
				s.evaluate(ctx, fromAgent)
			case s.unlisted[from]:
				delete(s.unlisted, from)
			default:
				ended = true
				return
			}
			from.cancel()
		}
		for _, old := range slices.Clone(sst.routes) {
			if old.kind != localapi.WakeTerminal {
				continue
			}
			s.remove(sst, old)
			if name, ok := left[old]; ok {
				s.displace(agent, old, name)
				continue
			}
			old.cancel()
		}
		s.nextID++
		r.id = s.nextID
		rctx, cancel := context.WithCancel(ctx)
		r.cancel = cancel
		r.pasting, r.unlist = context.WithCancel(rctx)
		sst.routes = append(sst.routes, r)
		go s.terminal(rctx, agent, r, term)
		s.log.Info("terminal wake-up route", "agent", agent, "pane", req.Pane, "socket", req.Socket)
		if s.cfg.Terminals != nil {
			saved := s.savedOf(agent, r)
			if err := s.cfg.Terminals.SaveTerminal(saved); err != nil {
				// The route works; only a restart of the node would lose it.
				s.log.Warn("terminal wake-up route not kept for restarts", "agent", agent, "pane", req.Pane, "err", err)
			}
			if from != nil {
				if err := s.cfg.Terminals.DropTerminal(fromAgent, from.socket, from.pane); err != nil {
					s.log.Warn("terminal wake-up route not dropped from the store", "agent", fromAgent, "pane", from.pane, "err", err)
				}
			}
		}
		s.evaluate(ctx, agent)
	})
	switch {
	case err != nil:
		return err
	case gave != nil:
		return gave
	case taken != nil:
		return routeTaken(agent, taken)
	case ended:
		return errRouteEnded
	}
	return nil
}

// routeTaken is the ErrRouteTaken of agent's route o.
func routeTaken(agent string, o *route) error {
	return fmt.Errorf("%w: %s's is tmux pane %s on %s, whose program still runs, and whose session is still bound to the name: it keeps it", ErrRouteTaken, agent, o.pane, o.socket)
}

// sessionAgent is the name session is bound to (Config.SessionAgent);
// without one, agent, the name its route is under.
func (s *Service) sessionAgent(ctx context.Context, session, agent string) (string, error) {
	if s.cfg.SessionAgent == nil {
		return agent, nil
	}
	return s.cfg.SessionAgent(ctx, session)
}

// displace takes terminal route r off agent, its name until now, for a
// move of another pane to it: r's session took name, another name, and r
// has not moved yet. r pastes no more (a paste under way stops) and is no
// agent's route; its watcher beats at once, finds agent held by another
// session, and moves r to name (its kept record is kept under name until
// then, if that name has none), or ends it. Run's goroutine.
func (s *Service) displace(agent string, r *route, name string) {
	s.unlisted[r] = true
	r.displaced.Store(true)
	r.unlist()
	if name != "" {
		r.renamed.Store(&name)
		if s.cfg.Terminals != nil {
			saved, err := s.cfg.Terminals.Terminals()
			if err == nil && !slices.ContainsFunc(saved, func(t Saved) bool { return t.Agent == name }) {
				err = s.cfg.Terminals.SaveTerminal(r.saved(name))
			}
			if err != nil {
				s.log.Warn("terminal wake-up route not kept for restarts under its session's new name", "agent", name, "pane", r.pane, "err", err)
			}
		}
	}
	s.log.Info("terminal wake-up route taken off its name, which its session left: it moves to the session's new name", "agent", agent, "to", name, "pane", r.pane, "socket", r.socket)
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// terminal runs a terminal route: it pastes what it is handed when the
// agent is idle, and, in a goroutine of its own (a paste may wait for the
// agent up to Config.Limit), keeps the agent registered while the pane
// lives, with the state its screen shows, and drops the route when the
// pane is gone.
func (s *Service) terminal(ctx context.Context, agent string, r *route, term *tmux.Terminal) {
	defer close(r.done)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var once sync.Once
	// end ends the route and drops its kept record; paneGone says its pane
	// is gone (or its program exited), and the agent it kept registered is
	// let go (Config.TerminalGone).
	end := func(why error, paneGone bool) {
		once.Do(func() {
			defer stop()
			if paneGone {
				s.log.Info("terminal wake-up route gone", "agent", agent, "pane", r.pane, "err", why)
			} else {
				s.log.Info("terminal wake-up route ended", "agent", agent, "pane", r.pane, "err", why)
			}
			if s.cfg.Terminals != nil {
				names := []string{agent}
				if name := r.renamed.Load(); name != nil && *name != agent {
					names = append(names, *name) // kept there when it was taken off agent
				}
				for _, a := range names {
					if err := s.cfg.Terminals.DropTerminal(a, r.socket, r.pane); err != nil {
						s.log.Warn("terminal wake-up route not dropped from the store", "agent", a, "pane", r.pane, "err", err)
					}
				}
			}
			if s.cfg.TerminalGone != nil && paneGone {
				s.cfg.TerminalGone(ctx, agent, r.session)
				if name := r.renamed.Load(); name != nil && *name != agent {
					s.cfg.TerminalGone(ctx, *name, r.session)
				}
			}
			s.do(ctx, func(ctx context.Context) { //nolint:errcheck // stopping: nothing is left to drop
				st := s.state(agent)
				s.remove(st, r)
				delete(s.unlisted, r)
				r.gone = paneGone
				for _, is := range st.items {
					is.handed = time.Time{} // the next route may try at once
					if is.pasted {
						// Pasted into a pane that is gone: the agent may not
						// have read it, and a new pane of it may take it again.
						is.pasted = false
						delete(is.tried, localapi.WakeTerminal)
					}
				}
				s.evaluate(ctx, agent)
			})
		})
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		s.watchTerminal(ctx, agent, r, term, end)
	}()
	defer func() { <-watched }()
	for {
		select {
		case <-ctx.Done():
			return
		case items := <-r.texts:
			text, shown := manual.WakeShown(items, agent+"@"+s.cfg.Self, manual.Shell{Agent: agent})
			if s.cfg.Named != nil {
				text = s.cfg.Named(text)
			}
			dctx, cancel := context.WithTimeout(ctx, s.cfg.Limit)
			unhook := context.AfterFunc(r.pasting, cancel) // taken off its name
			// Kept for restarts before its Enter: a restart right after the
			// program took it must not paste it again (keepPasted).
			err := term.DeliverThen(dctx, text, func() {
				if s.cfg.Terminals == nil {
					return
				}
				s.do(context.WithoutCancel(ctx), func(context.Context) { //nolint:errcheck // stopping: not kept
					s.keepPasted(agent, shown...)
				})
			})
			unhook()
			cancel()
			ended := ctx.Err() != nil // replaced, its agent ended, or its pane gone
			switch {
			case err == nil:
				s.log.Debug("wake text pasted", "agent", agent, "pane", r.pane, "items", len(items))
			case ended, r.pasting.Err() != nil:
			case paneGone(err):
				end(err, true)
				return
			case errors.Is(err, tmux.ErrNotSent):
				// A person came to the pane as it was pasted: the line is
				// theirs. Not pasted again while it is at the prompt (a
				// draft); their human is told as for one.
				s.log.Info("wake text pasted but left unsent at the prompt to the person at the pane", "agent", agent, "pane", r.pane, "err", err)
				// What its prompt line shows now: once the prompt is empty
				// again, the line still on the screen above it says the
				// person sent it (watchTerminal), its going that they
				// cleared it.
				lctx, lcancel := context.WithTimeout(ctx, s.lookFor())
				sc, cerr := tmux.Server{Socket: r.socket, Bin: s.cfg.TmuxBin}.Capture(lctx, r.pane)
				lcancel()
				if line := strings.TrimRight(sc.CursorLine(), " "); cerr == nil && !r.emptyPrompt(line) {
					ids := make([]string, len(items))
					for i, it := range items {
						ids[i] = it.ID
					}
					r.unsent.Store(&unsentLine{line: line, items: ids})
				}
			default:
				s.log.Info("wake text not pasted", "agent", agent, "pane", r.pane, "err", err)
			}
			// Recorded also when the route ended meanwhile: a text pasted
			// whole as the route was replaced is in its pane all the same
			// (Deliver sends the Enter of a paste it made). One pasted into
			// a pane found gone is not.
			s.do(context.WithoutCancel(ctx), func(ctx context.Context) { //nolint:errcheck // stopping
				r.busy = false
				// Handed again (what this try did not paste, or only
				// counted) only once the watcher sees the agent idle anew,
				// not on a look from before this try.
				r.idle.Store(false)
				pasted := false
				for _, it := range items {
					is := s.state(agent).items[it.ID]
					switch {
					case is == nil:
					case err == nil && !r.gone && slices.Contains(shown, it.ID):
						is.pasted, is.told = true, false
						pasted = true
					default:
						// Not pasted, or only counted in the text ("… and N
						// more"): not pasted whole, so not reached.
						// The terminal had its turn; the next route may try
						// at once, and this one again once its agent is idle
						// (evaluate).
						is.handed = time.Time{}
					}
				}
				if pasted || s.cfg.Terminals != nil && err != nil {
					// What was kept before the Enter, made true.
					s.keepPasted(agent)
				}
				s.evaluate(ctx, agent)
			})
			if ended {
				return
			}
		}
	}
}

// watchTerminal looks at a terminal route's pane every Config.PaneCheck
// until ctx ends: a pane that is gone, whose program exited, or that runs
// another program (it was respawned) ends the route (end); a look that
// fails for a reason that says nothing of the pane tells nothing; else the agent is heartbeaten every Config.HeartbeatEvery,
// and at once when what the screen shows changes. The state is "busy"
// while the screen changes or a person's draft is at the prompt, "idle" at
// the empty prompt; it counts once two looks in a row agree (a look in
// copy mode tells nothing), so that one look at a moment of change does
// not flip it. A beat that fails is tried again at the next
// HeartbeatEvery, not at every look; one that finds the agent unregistered
// binds its session again (Config.Rebind), and moves the route when the
// session took another name (moveTerminal).
func (s *Service) watchTerminal(ctx context.Context, agent string, r *route, term *tmux.Terminal, end func(why error, paneGone bool)) {
	check := time.NewTicker(s.cfg.PaneCheck)
	defer check.Stop()
	// A tmux call that hangs must not hold the heartbeat back past the
	// agent's TTL: a look gets this long, and one that runs out tells
	// nothing (whether the pane lives is not known; the agent stays).
	lookFor := s.lookFor()
	// The first look beats: the agent may have been registered long before
	// (`parley run` registers it, then learns its prompt).
	var lastBeat time.Time
	var seen, sent string // the state the last look showed, and the one last sent
	failing := false      // the last beat failed: the next waits for HeartbeatEvery
	for {
		select {
		case <-ctx.Done():
			return
		case <-check.C:
		case <-r.kick:
			lastBeat = time.Time{} // beat at this look
		}
		lctx, cancel := context.WithTimeout(ctx, lookFor)
		a, sc, err := term.Look(lctx)
		cancel()
		if p := term.Prompt(); err == nil && p != "" && p != r.promptLine() {
			r.relearned.Store(&p)
			s.keepPrompt(ctx, agent, r)
		}
		if u := r.unsent.Load(); err == nil && a == tmux.Idle && u != nil {
			s.settleUnsent(ctx, agent, r, u, sc)
		}
		if err == nil && a == tmux.Dead {
			err = tmux.ErrPaneDead
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded):
			s.log.Info("terminal pane not looked at: tmux did not answer", "agent", agent, "pane", r.pane, "after", lookFor)
		case paneGone(err):
			end(err, true)
			return
		default:
			// An error that says nothing of the pane (tmux cannot be run,
			// or speaks another protocol than its server): the pane and its
			// agent may well be there; the next look tries again.
			s.log.Info("terminal pane not looked at", "agent", agent, "pane", r.pane, "err", err)
		}
		now := "" // what this look tells: nothing when it ran out, or in copy mode
		switch {
		case err != nil:
		case a == tmux.Idle:
			now = "idle"
		case a == tmux.Busy, a == tmux.Draft:
			now = "busy"
		}
		r.idle.Store(now == "idle" && seen == "idle")
		state := ""
		if now != "" && now == seen && now != sent {
			state = now
		}
		if now != "" {
			seen = now
		}
		due := time.Since(lastBeat) >= s.cfg.HeartbeatEvery
		if s.cfg.Heartbeat == nil || (!due && (state == "" || failing)) {
			continue
		}
		lastBeat = time.Now()
		err = s.cfg.Heartbeat(ctx, agent, r.session, state)
		if ctx.Err() != nil {
			return // the route ended (dropped, replaced): it binds nothing again
		}
		if errors.Is(err, ErrUnregistered) && s.cfg.Rebind != nil && r.session != "" {
			// Its registration is gone while its pane lives: bind its
			// session again, or the agent stays unknown, asks to it refused.
			name, rerr := s.cfg.Rebind(ctx, r.session)
			switch {
			case ctx.Err() != nil:
				return
			case rerr != nil:
				s.log.Info("terminal agent not registered again", "agent", agent, "pane", r.pane, "err", rerr)
			case name != agent || r.displaced.Load():
				// Taken off its name (displace), the route moves to its
				// session's name even when that is the name it was under.
				r.renamed.Store(&name)
				merr := s.moveTerminal(ctx, agent, name, r)
				switch {
				case merr == nil, ctx.Err() != nil, errors.Is(merr, errRouteEnded):
					return // moved (the new route runs), or this route ended
				case paneGone(merr):
					end(merr, true)
					return
				case errors.Is(merr, ErrRouteTaken):
					// Another pane keeps the name: this pane is no longer
					// woken; its session's new name is left to the registry
					// (it lapses unless something else renews it).
					s.log.Warn("terminal wake-up route not moved to the agent's new name: this pane is no longer woken (start its program again with parley run under a name of its own, or end the other agent first)",
						"agent", agent, "to", name, "pane", r.pane, "err", merr)
					end(merr, false)
					return
				}
				// tmux did not answer: the route stays, and the next beat
				// (a heartbeat period on) binds the session and tries again.
				s.log.Warn("terminal wake-up route not moved to the agent's new name yet: it tries again", "agent", agent, "to", name, "pane", r.pane, "after", s.cfg.HeartbeatEvery, "err", merr)
			default:
				r.renamed.Store(nil) // its session holds the route's name again
				s.log.Info("terminal agent registered again", "agent", agent, "pane", r.pane)
				// Registered afresh, without a state: it goes with the next look.
				failing, sent = false, ""
				continue
			}
		}
		failing = err != nil
		if err != nil {
			if ctx.Err() == nil {
				s.log.Debug("terminal agent heartbeat failed", "agent", agent, "err", err)
			}
			continue
		}
		if state != "" {
			sent = state
		}
	}
}

// savedOf is terminal route r's record for restarts, as agent's, with the
// items pasted that the agent has not read. Run's goroutine.
func (s *Service) savedOf(agent string, r *route) Saved {
	t := r.saved(agent)
	st := s.state(agent)
	for id, is := range st.items {
		if is.pasted {
			t.Pasted = append(t.Pasted, id)
		}
	}
	for id := range st.pastedKept {
		if st.items[id] == nil {
			t.Pasted = append(t.Pasted, id)
		}
	}
	slices.Sort(t.Pasted)
	return t
}

// keepPasted keeps what agent's terminal route pasted for restarts (in its
// kept record), and the items also given (a paste about to be sent), so
// that a restart does not paste them again. Run's goroutine.
func (s *Service) keepPasted(agent string, also ...string) {
	if s.cfg.Terminals == nil {
		return
	}
	for _, r := range s.state(agent).routes {
		if r.kind != localapi.WakeTerminal {
			continue
		}
		t := s.savedOf(agent, r)
		for _, id := range also {
			if !slices.Contains(t.Pasted, id) {
				t.Pasted = append(t.Pasted, id)
			}
		}
		if err := s.cfg.Terminals.SaveTerminal(t); err != nil {
			s.log.Warn("what a terminal wake-up route pasted not kept for restarts", "agent", agent, "pane", r.pane, "err", err)
		}
	}
}

// keepPrompt keeps the prompt line a terminal route learned again for
// restarts, while the route is still agent's (in Run's goroutine, so that
// a ForgetTerminal's record of the end is not written over).
func (s *Service) keepPrompt(ctx context.Context, agent string, r *route) {
	s.log.Info("terminal agent's empty prompt learned again: the line learned first is gone", "agent", agent, "pane", r.pane, "prompt", r.promptLine())
	if s.cfg.Terminals == nil {
		return
	}
	s.do(ctx, func(context.Context) { //nolint:errcheck // the route ended
		if !slices.Contains(s.state(agent).routes, r) {
			return
		}
		if err := s.cfg.Terminals.SaveTerminal(s.savedOf(agent, r)); err != nil {
			s.log.Warn("terminal wake-up route's prompt learned again not kept for restarts", "agent", agent, "pane", r.pane, "err", err)
		}
	})
}

// settleUnsent is the watcher's first look at an empty prompt after a
// paste was left unsent to a person (u): when the line that showed it is
// still on the screen, above the prompt, the person sent it, and its
// items count as pasted (not pasted again); when it went, they cleared it,
// and the items are pasted again as for a draft.
func (s *Service) settleUnsent(ctx context.Context, agent string, r *route, u *unsentLine, sc tmux.Screen) {
	r.unsent.Store(nil)
	sent := false
	for y, l := range sc.Lines {
		if y != sc.CursorY && strings.TrimRight(l, " ") == u.line {
			sent = true
		}
	}
	if !sent {
		return
	}
	s.log.Info("wake text left unsent was sent by the person at the pane", "agent", agent, "pane", r.pane)
	s.do(ctx, func(context.Context) { //nolint:errcheck // the route ended
		st := s.state(agent)
		for _, id := range u.items {
			if is := st.items[id]; is != nil {
				is.pasted, is.told = true, false
			}
		}
		s.keepPasted(agent)
	})
}

// moveTerminal makes a terminal route's pane the route of name, the agent
// its session holds now (it took another name), in place of the route of
// agent, whose registration went with the rename: both at once, or neither
// (bindTerminal).
func (s *Service) moveTerminal(ctx context.Context, agent, name string, r *route) error {
	s.log.Info("terminal wake-up route moves to the agent's new name", "agent", agent, "to", name, "pane", r.pane)
	return s.bindTerminal(ctx, name, r.request(), r, agent, nil)
}

// paneGone reports whether a tmux error says the pane is gone, its
// program exited, or it runs another program now.
func paneGone(err error) bool {
	return errors.Is(err, tmux.ErrPaneDead) || errors.Is(err, tmux.ErrNoPane) || errors.Is(err, tmux.ErrNoServer) ||
		errors.Is(err, tmux.ErrPaneReplaced)
}

// WakeStatus implements localapi.Waker.
func (s *Service) WakeStatus(ctx context.Context) []localapi.WakeStatus {
	var out []localapi.WakeStatus
	err := s.do(ctx, func(context.Context) {
		for a, st := range s.agents {
			w := localapi.WakeStatus{Agent: a, Routes: []string{}, Idle: !st.idle.IsZero()}
			for _, r := range st.routes {
				w.Routes = append(w.Routes, r.kind)
			}
			for _, is := range st.items {
				if is.told {
					w.Unreached++
				}
			}
			if len(w.Routes) > 0 || w.Unreached > 0 || w.Idle {
				out = append(out, w)
			}
		}
	})
	if err != nil {
		return nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out
}

// ForgetTerminal drops the agent's terminal route, running and kept: the
// user ended the agent (unregister, kill), so its pane is no longer pasted
// into, and a restart of the node does not take the pane up again (the
// kept route is marked ended, so that Restore says why, and drops it). The
// routes of panes whose session took the name and that have not moved to
// it yet go too: one whose move waits to be tried again (tmux did not
// answer), is under way, or has not begun (its beat has not seen the
// rename; Config.SessionAgent tells), and one taken off its old name
// (displace). Each would register the name again at its move. It returns
// once the routes have stopped: no beat of theirs can then find the agent
// unregistered and bind its session again. It is not an error for the
// agent to have none.
func (s *Service) ForgetTerminal(ctx context.Context, agent string) error {
	var dropped []*route
	var kerr error
	err := s.do(ctx, func(ctx context.Context) {
		drop := func(r *route, under string) {
			r.cancel()
			dropped = append(dropped, r)
			s.log.Info("terminal wake-up route dropped", "agent", agent, "pane", r.pane, "under", under)
		}
		for a, st := range s.agents {
			for _, r := range slices.Clone(st.routes) {
				if r.kind == localapi.WakeTerminal && (a == agent || s.headsFor(ctx, r, agent)) {
					s.remove(st, r)
					drop(r, a)
				}
			}
		}
		for r := range s.unlisted {
			if s.headsFor(ctx, r, agent) {
				delete(s.unlisted, r)
				drop(r, "")
			}
		}
		if s.cfg.Terminals != nil {
			kerr = s.endKept(agent, dropped)
		}
	})
	if errors.Is(err, ErrStopped) {
		// Nothing runs any more; the kept route is marked ended.
		if s.cfg.Terminals != nil {
			return EndTerminal(s.cfg.Terminals, agent)
		}
		return nil
	}
	if err != nil {
		return err
	}
	for _, r := range dropped {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return kerr
}

// headsFor reports whether terminal route r, not agent's, is bound for it:
// its session took the name agent, and r has not moved there yet.
func (s *Service) headsFor(ctx context.Context, r *route, agent string) bool {
	if name := r.renamed.Load(); name != nil && *name == agent {
		return true
	}
	if s.cfg.SessionAgent == nil || r.session == "" {
		return false
	}
	name, err := s.cfg.SessionAgent(ctx, r.session)
	return err == nil && name == agent
}

// endKept marks ended the kept route of agent, and those of the panes of
// the routes dropped (kept under their old name). Run's goroutine.
func (s *Service) endKept(agent string, dropped []*route) error {
	saved, err := s.cfg.Terminals.Terminals()
	if err != nil {
		return err
	}
	for _, t := range saved {
		if t.Ended {
			continue
		}
		if t.Agent != agent && !slices.ContainsFunc(dropped, func(r *route) bool { return r.socket == t.Socket && r.pane == t.Pane }) {
			continue
		}
		t.Ended = true
		if err := s.cfg.Terminals.SaveTerminal(t); err != nil {
			return err
		}
	}
	return nil
}

// EndTerminal marks the agent's kept terminal route ended (ForgetTerminal),
// if it has one.
func EndTerminal(st Store, agent string) error {
	saved, err := st.Terminals()
	if err != nil {
		return err
	}
	for _, t := range saved {
		if t.Agent == agent && !t.Ended {
			t.Ended = true
			return st.SaveTerminal(t)
		}
	}
	return nil
}
