package board

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/gitrepo"
	"github.com/parley-mesh/parley/rooms"
)

// RoomPrefix starts the name of every board room: "board:" and the
// project key.
const RoomPrefix = "board:"

// RoomName is the name of a project's board rooms.
func RoomName(project string) string { return RoomPrefix + project }

// Rooms is what the board needs of the node's rooms (rooms.Manager).
type Rooms interface {
	List() []rooms.Info
	CreateRoom(ctx context.Context, name, purpose string, agent identity.AgentName) (identity.RoomID, error)
	Invite(ctx context.Context, id identity.RoomID, target peer.ID, agent identity.AgentName) (rooms.ID, error)
	Post(ctx context.Context, id identity.RoomID, agent identity.AgentName, kind rooms.Kind, body []byte) (rooms.ID, error)
	Since(id identity.RoomID, after uint64, limit int) ([]rooms.View, error)
	Changes() (<-chan struct{}, func())
	Get(id identity.RoomID) (rooms.Info, error)
}

var _ Rooms = (*rooms.Manager)(nil)

// Config configures a Service. Zero values are documented.
type Config struct {
	Rooms Rooms   // required
	Self  peer.ID // required: this node
	// Contacts lists the nodes to bring into this node's boards (live
	// contacts); nil: none.
	Contacts func() []peer.ID
	// Now is the clock; nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger // nil discards
	// InviteInterval is how often contacts missing from a board are
	// invited; zero: 30 s.
	InviteInterval time.Duration
	// Settle is how long a claim posted to a board other nodes share
	// waits before it is answered, for a claim another node made at the
	// same moment to arrive; zero: DefaultSettle, negative: none.
	Settle time.Duration
	// Hidden reports whether the notes of holder (an agent address) are
	// kept from this node's agents (another node's agent its user muted):
	// the notices quote them blank, except to the user; nil: none.
	Hidden func(holder string) bool
	// Store keeps the refused claims watched (to tell their agents when
	// their paths go free) and the notices told (not to tell them again)
	// across a restart; nil: in memory only.
	Store Store
}

// DefaultSettle is Config.Settle's default: well above the time an event
// takes to reach a connected member (milliseconds on a network, a few
// hundred across continents or through a relay).
const DefaultSettle = 500 * time.Millisecond

// memberWait is how long a claim waits for its node to be a member of a
// board room it opened on an invite, when it has no other (as a post in a
// room does).
const memberWait = 10 * time.Second

// Service keeps the boards of the projects this node's agents work on.
type Service struct {
	cfg  Config
	log  *slog.Logger
	kick chan struct{} // asks Run to invite contacts now

	mu       sync.Mutex // protects projects; held from a claim's check to its post
	projects map[string]*project
	inviter  map[string]identity.AgentName   // project → the agent that invites (the last to claim)
	watches  map[identity.AgentName][]*watch // refused claims, to tell when their paths go free
	seq      uint64                          // the last number given to a watch stored
	// Notices handed out (by Notice.ID), with the expiry of the claim each
	// is about: a notice is told only while its claim lives, so it is
	// forgotten once that has passed. Kept in the store too
	// (toldstore.go), at most maxTold.
	told map[string]int64
	// aheadReads counts the entries held back as dated ahead that the
	// claims' check read from the store (simulateAhead), for tests.
	aheadReads int
	waiting    atomic.Int32 // claims waiting for another to go
}

// Waiting reports how many claims wait for a conflicting claim to go.
func (s *Service) Waiting() int { return int(s.waiting.Load()) }

type project struct {
	key     string
	cursors map[identity.RoomID]uint64 // board rooms and how far they were read
	state   *State
	// Events dated past MaxAhead of this node's clock, a heap by time:
	// folded once it gets near, read from the store again then.
	later   laterHeap
	lastOwn Entry // the last claim of this node's agents taken in (ID, Time, Holder: the agent)
	// gen counts the changes of state and later (with state.Len(), which
	// Trim changes): sim is the simulation of later on top of state made
	// at gen, kept until either changes (Service.simulateAhead).
	gen int
	sim *aheadSim
	// left is set when read found a room of cursors left: load folds the
	// board again without it, as a restart would.
	left bool
}

// aheadSim is the claims held back as dated ahead that would hold their
// paths in the fold, as of project.gen and state.Len() n.
type aheadSim struct {
	gen, n int
	won    []Held // in date order
}

// maxAheadChecked is how many of the entries held back as dated ahead, the
// earliest by date, a claim is checked against (Service.conflict), and
// maxAheadPaths how many paths of theirs: once their claims reach that
// many, the entries after are not read (the overlaps of globs cost tens of
// µs each, and the simulation compares every claim with those before it).
// A flood of entries dated ahead, all within a claim's ttl, hides those
// dated after the first of them from the check: a claim over one
// of those is not refused, and takes it in the fold. They are folded
// all the same when they come due; the check would otherwise read and
// fold again every one of them, under the board's lock, at every claim.
const (
	maxAheadChecked = 32
	maxAheadPaths   = MaxPaths
)

// laterRef is where an event dated ahead is stored.
type laterRef struct {
	ID      string
	Room    identity.RoomID
	Arrival uint64
	Time    int64
}

// laterHeap is a min-heap of laterRef by Time (container/heap): a member
// may post many events dated ahead, in any order of their dates.
type laterHeap []laterRef

func (h laterHeap) Len() int           { return len(h) }
func (h laterHeap) Less(i, j int) bool { return h[i].Time < h[j].Time }
func (h laterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *laterHeap) Push(x any)        { *h = append(*h, x.(laterRef)) }
func (h *laterHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = laterRef{}
	*h = old[:len(old)-1]
	return x
}

// MaxAhead is how far past this node's clock a claim or release may be
// dated and still be folded; one dated further waits until the clock is
// that near. The fold runs in its authors' time, and the board's state is
// as of the last entry folded: a claim dated a year ahead (a hostile
// member, a clock set wrong) would otherwise end every claim on the board,
// on every node, and hold its paths for a year.
const MaxAhead = 2 * time.Minute

// New builds a Service; it starts nothing until Run.
func New(cfg Config) (*Service, error) {
	if cfg.Rooms == nil || cfg.Self == "" {
		return nil, errors.New("board: config needs Rooms and Self")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.InviteInterval == 0 {
		cfg.InviteInterval = 30 * time.Second
	}
	s := &Service{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1),
		projects: map[string]*project{}, inviter: map[string]identity.AgentName{},
		watches: map[identity.AgentName][]*watch{}, told: map[string]int64{}}
	if err := s.loadWatches(); err != nil {
		return nil, err
	}
	if err := s.loadTold(); err != nil {
		return nil, err
	}
	return s, nil
}

// Run invites the node's contacts into its boards, at its start (a contact
// approved while the node was starting had no board to kick), when a board
// is made or a contact becomes active, and every InviteInterval, until ctx
// ends.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.InviteInterval)
	defer t.Stop()
	s.inviteContacts(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-s.kick:
		}
		s.inviteContacts(ctx)
	}
}

// Kick asks Run to invite the node's contacts into its boards now, not at
// its next tick: a contact that became active since shares the boards at
// once, before either side claims what the other holds.
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// removedFrom reports whether pid's claims in the project's board room
// are ignored (it was removed from the board, or from a room of that
// room's creator, and not invited back since): it is not invited again by
// itself.
func (s *Service) removedFrom(key string, room identity.RoomID, pid peer.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load(key)
	return err == nil && p.state.Removed(pid.String(), string(room))
}

func (s *Service) inviteContacts(ctx context.Context) {
	if s.cfg.Contacts == nil {
		return
	}
	contacts := s.cfg.Contacts()
	if len(contacts) == 0 {
		return
	}
	s.mu.Lock()
	inviter := make(map[string]identity.AgentName, len(s.inviter))
	for k, v := range s.inviter {
		inviter[k] = v
	}
	s.mu.Unlock()
	for _, in := range s.cfg.Rooms.List() {
		key, ok := strings.CutPrefix(in.Name, RoomPrefix)
		if !ok {
			continue
		}
		agent := inviter[key]
		if agent == "" {
			agent = s.lastAgent(key)
		}
		if agent == "" {
			continue // no agent of this node works on it
		}
		for _, c := range contacts {
			if c == s.cfg.Self || slices.Contains(in.Members, c) || s.removedFrom(key, in.ID, c) {
				continue
			}
			ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := s.cfg.Rooms.Invite(ictx, in.ID, c, agent)
			cancel()
			if err != nil {
				s.log.Debug("board: invite", "room", in.ID, "peer", c, "err", err)
			}
		}
	}
}

// lastAgent is the last agent of this node that claimed on the project's
// board (its history says who works on it here after a restart), or "".
func (s *Service) lastAgent(key string) identity.AgentName {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load(key)
	if err != nil {
		return ""
	}
	if p.lastOwn.ID == "" {
		return ""
	}
	s.inviter[key] = identity.AgentName(p.lastOwn.Holder)
	return s.inviter[key]
}

func (s *Service) holder(agent identity.AgentName) string {
	return string(agent) + "@" + s.cfg.Self.String()
}

func checkProject(key string) error {
	if err := gitrepo.CheckKey(key); err != nil {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return nil
}

// keepFolded is how far back of its last entry a board's fold keeps its
// entries (State.Trim): every claim that may be live at this node's clock
// (MaxTTL, and MaxAhead of entries dated ahead), and an hour of late
// entries beyond. An entry dated further back has the board folded again
// from the rooms' events.
const keepFolded = MaxTTL + MaxAhead + time.Hour

// load returns the project's board, read up to what the rooms hold. A
// project this node has no board room of is not kept: its board is empty.
// Callers hold s.mu.
func (s *Service) load(key string) (*project, error) {
	p := s.projects[key]
	if p == nil {
		p = newProject(key)
	}
	name := RoomName(key)
	for _, in := range s.cfg.Rooms.List() {
		if in.Name == name {
			if _, ok := p.cursors[in.ID]; !ok {
				p.cursors[in.ID] = 0
			}
		}
	}
	if s.projects[key] == nil {
		if len(p.cursors) == 0 {
			return p, nil // read of a board this node has none of
		}
		s.projects[key] = p
	}
	if err := s.read(p); err != nil {
		return nil, err
	}
	if p.state.Stale() || p.left {
		// An entry dated before what the fold kept, or a room left (its
		// claims go, as they do at a restart): fold the board again.
		fresh := newProject(key)
		for id := range p.cursors {
			fresh.cursors[id] = 0
		}
		if err := s.read(fresh); err != nil {
			return nil, err
		}
		s.log.Debug("board: folded again from the start", "project", key, "entries", fresh.state.Len())
		*p = *fresh
	}
	p.state.Trim(keepFolded)
	return p, nil
}

func newProject(key string) *project {
	return &project{key: key, cursors: map[identity.RoomID]uint64{}, state: NewState()}
}

// read takes into p's fold the events of its rooms past their cursors, and
// those dated ahead that the clock is near now (read from the store again).
func (s *Service) read(p *project) error {
	limit := s.cfg.Now().Add(MaxAhead).UnixMilli()
	for len(p.later) > 0 && p.later[0].Time <= limit {
		v, ok, err := s.fetchLater(p.later[0])
		if err != nil {
			return err
		}
		if ok {
			s.take(p, v)
		}
		heap.Pop(&p.later)
		p.gen++
	}
	for id, after := range p.cursors {
		for {
			vs, err := s.cfg.Rooms.Since(id, after, 1000)
			if errors.Is(err, rooms.ErrUnknownRoom) {
				delete(p.cursors, id) // left: load folds the board again without it
				p.left = true
				break
			}
			if err != nil {
				return fmt.Errorf("board: read %s: %w", id, err)
			}
			for _, v := range vs {
				after = v.Arrival
				if v.Kind != rooms.KindClaim && v.Kind != rooms.KindRelease && !membership(v) {
					continue
				}
				if v.Time > limit {
					// Only where to find it again: its body waits in the store.
					r := laterRef{ID: v.ID.String(), Room: v.Room, Arrival: v.Arrival, Time: v.Time}
					heap.Push(&p.later, r)
					p.gen++
					continue
				}
				s.take(p, v)
			}
			p.cursors[id] = after
			if len(vs) < 1000 {
				break
			}
		}
	}
	return nil
}

// take folds one claim or release event into p.
func (s *Service) take(p *project, v rooms.View) {
	e := Entry{ID: v.ID.String(), Room: string(v.Room), Holder: string(v.Agent) + "@" + v.Author.String(),
		Time: v.Time, Kind: string(v.Kind), Body: v.Body}
	switch {
	case v.Kind == rooms.KindCreate:
		e.Holder, e.Kind = "@"+v.Author.String(), KindCreated
	case v.Kind == rooms.KindJoin:
		e.Holder, e.Kind = "@"+v.Author.String(), KindJoined
	case membership(v):
		e.Holder, e.Kind = "@"+v.Target.String(), KindInvited
		if v.Kind == rooms.KindLeave {
			e.Kind = KindRemoved
		}
	}
	if v.Author == s.cfg.Self && v.Kind == rooms.KindClaim && (p.lastOwn.ID == "" || p.lastOwn.before(&e)) {
		p.lastOwn = Entry{ID: e.ID, Time: e.Time, Holder: string(v.Agent)}
	}
	p.state.Add(e)
	p.gen++
}

// membership reports whether v is a room's create event, a node's join,
// its removal (a leave naming another node) or invite of a node, which
// the fold takes in: they decide whose claims end at a removal, and where
// (State.off).
func membership(v rooms.View) bool {
	return v.Kind == rooms.KindCreate || v.Kind == rooms.KindJoin ||
		v.Kind == rooms.KindLeave && v.Target != "" && v.Target != v.Author || v.Kind == rooms.KindInvite && v.Target != ""
}

// fetchLater reads an event dated ahead from the store again; ok is false
// when it is gone (its room left).
func (s *Service) fetchLater(r laterRef) (v rooms.View, ok bool, err error) {
	vs, err := s.cfg.Rooms.Since(r.Room, r.Arrival-1, 1)
	if errors.Is(err, rooms.ErrUnknownRoom) {
		return rooms.View{}, false, nil
	}
	if err != nil {
		return rooms.View{}, false, fmt.Errorf("board: read %s: %w", r.Room, err)
	}
	if len(vs) == 0 || vs[0].ID.String() != r.ID {
		return rooms.View{}, false, nil
	}
	return vs[0], true, nil
}

// room returns the board room to post in: the smallest ID of the
// project's board rooms this node is a member of, or a new one when it has
// none. A board room it opened on an invite whose event it has not stored
// yet (the catch-up with the inviter may bring the room's claims first) is
// not one to post in: errNotInYet when it has only such rooms, which the
// caller waits out without s.mu (a post there would wait for the catch-up
// while holding it). Callers hold s.mu.
func (s *Service) room(ctx context.Context, p *project, agent identity.AgentName) (identity.RoomID, error) {
	if len(p.cursors) > 0 {
		var ids, in []identity.RoomID
		open := false
		for id := range p.cursors {
			ids = append(ids, id)
			r, err := s.cfg.Rooms.Get(id)
			open = open || err == nil
			if err == nil && slices.Contains(r.Members, s.cfg.Self) {
				in = append(in, id)
			}
		}
		switch {
		case len(in) > 0:
			return slices.Min(in), nil
		case open:
			return "", fmt.Errorf("%w: this node is not yet a member of the board rooms of %s it was invited into: it is still catching up with its inviter (which may be offline); try again later", errNotInYet, p.key)
		default: // rooms it left: the post says so
			return slices.Min(ids), nil
		}
	}
	id, err := s.cfg.Rooms.CreateRoom(ctx, RoomName(p.key), "the board of project "+p.key+": who works on which files", agent)
	if err != nil {
		return "", fmt.Errorf("board: create the board of %s: %w", p.key, err)
	}
	p.cursors[id] = 0
	s.projects[p.key] = p // a board here now
	s.Kick()              // its contacts invited now, not at the next tick
	return id, nil
}

// boardKeys lists the projects whose board rooms this node is in, and
// those it read. Callers hold s.mu.
func (s *Service) boardKeys() []string {
	var keys []string
	for _, in := range s.cfg.Rooms.List() {
		if key, ok := strings.CutPrefix(in.Name, RoomPrefix); ok && checkProject(key) == nil && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	for key := range s.projects {
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// Claims returns the live claims of every board this node is in, by
// project.
func (s *Service) Claims() map[string][]Held {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]Held{}
	now := s.cfg.Now()
	for _, key := range s.boardKeys() {
		p, err := s.load(key)
		if err != nil {
			s.log.Debug("board: read", "project", key, "err", err)
			continue
		}
		if live := p.state.Live(now); len(live) > 0 {
			out[key] = live
		}
	}
	return out
}

// ClaimRequest is a claim an agent makes.
type ClaimRequest struct {
	Project string
	Paths   []string
	Note    string
	TTL     time.Duration // zero: DefaultTTL
	Wait    time.Duration // how long to wait for a conflicting claim to go
	// MayPost, if not nil, is asked before each try: an error ends the
	// claim unposted (an agent killed or muted while its claim waited).
	MayPost func() error
}

// ClaimResult is a claim made.
type ClaimResult struct {
	Event  string
	Held   []Held // the agent's live claims on the board
	Waited time.Duration
}

// ConflictError is a claim refused: it overlaps Held.
type ConflictError struct {
	Held Held
	Path string // the claimed path that overlaps
	// Ahead is set when Held is a claim dated past MaxAhead of this
	// node's clock, held back from the fold until the clock is near: by
	// how much. Posted now, the claim refused would be dated before it,
	// and take it in the fold on every node.
	Ahead time.Duration
}

func (e *ConflictError) Error() string {
	if e.Ahead > 0 {
		return fmt.Sprintf("board: %s is claimed by %s, in a claim dated %s ahead of this node's clock (this node's clock may be behind): %q",
			e.Held.Path, e.Held.Holder, e.Ahead.Round(time.Second), e.Held.Note)
	}
	return fmt.Sprintf("board: %s is claimed by %s until %s: %q", e.Held.Path, e.Held.Holder,
		time.UnixMilli(e.Held.Expires).UTC().Format(time.RFC3339), e.Held.Note)
}

// Unwrap makes a ConflictError an ErrConflict.
func (e *ConflictError) Unwrap() error { return ErrConflict }

func conflictError(w *inTheWay, paths []string) *ConflictError {
	ce := &ConflictError{Held: w.Held, Ahead: w.ahead}
	for _, p := range paths {
		if Overlap(p, w.Held.Path) {
			ce.Path = p
			break
		}
	}
	return ce
}

// inTheWay is another agent's claim that a claim overlaps: live, or dated
// ahead by ahead (held back).
type inTheWay struct {
	Held
	ahead time.Duration
}

// conflict returns the claim of another agent that a claim of paths by
// holder, posted now to live ttl, would overlap, or nil: a live claim, or
// one dated past MaxAhead of this node's clock (held back from the fold)
// that the claim would still be live at, and so take in the fold on every
// node, though it was made first as far as this node can tell (this
// node's clock, or the one that dated it, is wrong). Only the first
// maxAheadChecked entries held back (maxAheadPaths) are checked. Callers hold s.mu.
func (s *Service) conflict(p *project, holder string, paths []string, ttl time.Duration) (*inTheWay, error) {
	now := s.cfg.Now()
	if h := p.state.Conflict(holder, paths, now); h != nil {
		return &inTheWay{Held: *h}, nil
	}
	if len(p.later) == 0 {
		return nil, nil
	}
	won, err := s.simulateAhead(p)
	if err != nil {
		return nil, err
	}
	// The rooms date the claim up to rooms.MaxStepBack past the clock
	// (just after a newer parent, or this node's previous event): it may
	// live until then + ttl. The bound is the latest date it may have, not
	// the one it will have, which only the post knows: a claim held back
	// dated in that last minute refuses it too.
	until := now.Add(rooms.MaxStepBack + ttl).UnixMilli()
	for i := range won {
		h := &won[i]
		if h.Since >= until {
			break // the claim has expired by then
		}
		if h.Holder != holder && slices.ContainsFunc(paths, func(q string) bool { return Overlap(q, h.Path) }) {
			return &inTheWay{Held: *h, ahead: time.Duration(h.Since-now.UnixMilli()) * time.Millisecond}, nil
		}
	}
	return nil, nil
}

// simulateAhead returns the claims, among the first maxAheadChecked
// entries held back as dated ahead (and up to maxAheadPaths paths), that would hold their paths when
// folded in their order on top of the board as it is now: releases and
// expiry end claims before them, and a claim that overlaps a live one of
// another agent loses. A claim that holds is listed once for each path,
// with Since its date, in date order. The answer is kept until the board
// or the entries held back change. Callers hold s.mu.
func (s *Service) simulateAhead(p *project) ([]Held, error) {
	if p.sim != nil && p.sim.gen == p.gen && p.sim.n == p.state.Len() {
		return p.sim.won, nil
	}
	refs := slices.Clone(p.later)
	slices.SortFunc(refs, func(a, b laterRef) int { return cmp.Or(cmp.Compare(a.Time, b.Time), strings.Compare(a.ID, b.ID)) })
	refs = refs[:min(len(refs), maxAheadChecked)]
	var (
		idx  heldIndex // the claims of live, to find what a claim overlaps
		live []*Held
		won  []Held
		seen int // paths of the claims read
	)
	idx.reset(nil)
	end := func(gone func(h *Held) bool) {
		live = slices.DeleteFunc(live, func(h *Held) bool {
			if gone(h) {
				idx.remove(h)
				return true
			}
			return false
		})
	}
	for _, r := range refs {
		if seen >= maxAheadPaths {
			break
		}
		s.aheadReads++
		v, ok, err := s.fetchLater(r)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		end(func(h *Held) bool { return h.Expires <= v.Time })
		who := string(v.Agent) + "@" + v.Author.String()
		switch v.Kind {
		case rooms.KindClaim:
			c, err := DecodeClaim(v.Body)
			if err != nil {
				continue
			}
			seen += len(c.Paths)
			ks := pathKeys(c.Paths)
			if p.state.Conflict(who, c.Paths, time.UnixMilli(v.Time)) != nil || idx.first(who, ks, v.Time) != nil {
				continue // it loses
			}
			for i, q := range c.Paths {
				h := Held{Path: q, Holder: who, Note: c.Note, Since: v.Time, Expires: v.Time + c.TTL.Milliseconds(),
					Event: r.ID, Room: string(r.Room)}
				h.setKey(ks[i])
				won = append(won, h)
				if old := idx.find(who, ks[i]); old != nil {
					old.Expires, old.Note, old.Event, old.Room = h.Expires, h.Note, h.Event, h.Room // renewed
					continue
				}
				live = append(live, &h)
				idx.add(&h)
			}
		case rooms.KindRelease:
			rel, err := DecodeRelease(v.Body)
			if err != nil {
				continue
			}
			end(func(h *Held) bool {
				return h.Holder == who && names(rel.Paths, h)
			})
		}
	}
	p.sim = &aheadSim{gen: p.gen, n: p.state.Len(), won: won}
	return won, nil
}

// Claim puts paths on the project's board for agent. A claim that overlaps
// another agent's live claim is refused with a *ConflictError, at once or,
// with Wait, once Wait has passed without the other claim going.
func (s *Service) Claim(ctx context.Context, agent identity.AgentName, req ClaimRequest) (ClaimResult, error) {
	if err := checkProject(req.Project); err != nil {
		return ClaimResult{}, err
	}
	if req.TTL == 0 {
		req.TTL = DefaultTTL
	}
	if req.Wait < 0 {
		return ClaimResult{}, fmt.Errorf("%w: negative wait", ErrBadInput)
	}
	body, err := EncodeClaim(ClaimBody{Paths: req.Paths, Note: req.Note, TTL: req.TTL})
	if err != nil {
		return ClaimResult{}, err
	}
	paths, _ := CheckPaths(req.Paths, true)
	if held, ok := s.heldForms(agent, req.Project, paths); ok {
		// A folder claimed before it was made (or while it existed),
		// claimed again under its other form: the claim it renews.
		if body, err = EncodeClaim(ClaimBody{Paths: held, Note: req.Note, TTL: req.TTL}); err != nil {
			return ClaimResult{}, err
		}
		paths = held
	}
	start, began := s.cfg.Now(), time.Now()
	changes, stop := s.cfg.Rooms.Changes()
	defer stop()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if req.MayPost != nil {
			if err := req.MayPost(); err != nil {
				return ClaimResult{}, err
			}
		}
		res, h, err := s.tryClaim(ctx, agent, req.Project, paths, req.TTL, body)
		if h == nil && err == nil {
			h, err = s.settle(ctx, agent, req.Project, res.Event)
		}
		inYet := errors.Is(err, errNotInYet) && time.Since(began) < memberWait
		if h == nil && !inYet {
			if err == nil {
				res.Waited = s.cfg.Now().Sub(start)
				// Refused earlier, held now: "free now" has nothing to tell.
				s.mu.Lock()
				s.unwatchLocked(agent, req.Project, paths)
				s.mu.Unlock()
			}
			return res, err
		}
		var d time.Duration
		if inYet {
			// Look again when something is stored (the invite, at the
			// end of the catch-up).
			d = memberWait - time.Since(began)
		} else {
			left := req.Wait - s.cfg.Now().Sub(start)
			if left <= 0 {
				s.mu.Lock()
				s.watchLocked(agent, req.Project, paths, req.Note, req.TTL, h.Held, false)
				s.mu.Unlock()
				return ClaimResult{}, conflictError(h, paths)
			}
			// Look again when something is stored, when the claim in the
			// way expires, or when the wait is over.
			d = min(left, time.Until(time.UnixMilli(h.Expires))+time.Millisecond)
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		s.waiting.Add(1)
		select {
		case <-ctx.Done():
			s.waiting.Add(-1)
			return ClaimResult{}, ctx.Err()
		case <-changes:
		case <-timer.C:
		}
		s.waiting.Add(-1)
	}
}

// tryClaim posts the claim unless another agent's claim is in the way
// (conflict), which it returns.
func (s *Service) tryClaim(ctx context.Context, agent identity.AgentName, key string, paths []string, ttl time.Duration, body []byte) (ClaimResult, *inTheWay, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load(key)
	if err != nil {
		return ClaimResult{}, nil, err
	}
	holder := s.holder(agent)
	if c, err := DecodeClaim(body); err != nil {
		return ClaimResult{}, nil, err
	} else if err := s.checkWeight(p, KindClaim, Weight(c.Paths, c.Note)); err != nil {
		return ClaimResult{}, nil, err
	}
	if w, err := s.conflict(p, holder, paths, ttl); w != nil || err != nil {
		return ClaimResult{}, w, err
	}
	id, err := s.room(ctx, p, agent)
	if err != nil {
		return ClaimResult{}, nil, err
	}
	eid, err := s.cfg.Rooms.Post(ctx, id, agent, rooms.KindClaim, body)
	if err != nil {
		return ClaimResult{}, nil, fmt.Errorf("board: post claim: %w", err)
	}
	if s.inviter[key] == "" {
		s.Kick()
	}
	s.inviter[key] = agent
	if _, err := s.load(key); err != nil {
		return ClaimResult{}, nil, err
	}
	return ClaimResult{Event: eid.String(), Held: heldBy(p.state.Live(s.cfg.Now()), holder)}, nil, nil
}

// checkWeight refuses a claim or release (kind) of weight w (Weight) that
// would take this node's claims, or its releases, of the last NodeWindow
// past their limit (MaxNodeWeight, MaxNodeReleaseWeight): every node would
// ignore it. Callers hold s.mu.
func (s *Service) checkWeight(p *project, kind string, w int) error {
	have, limit := p.state.NodeWeight(s.cfg.Self.String(), kind, s.cfg.Now().UnixMilli()), nodeLimit(kind)
	if have+w <= limit {
		return nil
	}
	what, next := "claims", "claim fewer or shorter paths, or wait for older claims"
	if kind == KindRelease {
		what, next = "releases", "release all of an agent's claims at once (no paths), or wait for older releases"
	}
	return fmt.Errorf("%w: %w: its %s of the last %v weigh %d KiB on this board, and this one %d bytes: "+
		"past %d KiB, the most the board keeps of one node's %s (paths and notes, %d bytes for each and %d for each path), "+
		"every node would ignore it; %s to leave the %v",
		ErrBadInput, ErrNodeWeight, what, NodeWindow, have>>10, w, limit>>10, what, entryWeight, pathWeight, next, NodeWindow)
}

// settle waits Config.Settle after agent's claim event was posted to a
// board other nodes share, then folds again: a claim another node made at
// the same moment (neither node had the other's when it checked) has
// arrived by then, and the fold puts the earlier first on every node. The
// claim that lost is told so here (its claim_lost notice is not told
// again), instead of "claimed" now and lost a moment later. Nodes apart
// (a partition) still both hear "claimed": the later is told it lost
// once they meet.
func (s *Service) settle(ctx context.Context, agent identity.AgentName, key, event string) (*inTheWay, error) {
	d := s.cfg.Settle
	if d == 0 {
		d = DefaultSettle
	}
	if d < 0 || !s.shared(key) {
		return nil, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		// The claim is posted: it is the agent's unless it lost, as
		// its notices will say.
		return nil, nil
	case <-t.C:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load(key)
	if err != nil {
		return nil, err
	}
	r, ok := p.state.Record(event)
	if !ok || r.Lost == nil || r.Holder != s.holder(agent) {
		return nil, nil
	}
	_ = s.applyStore("notices told", s.tellLocked("lost:"+r.ID, r.Expires))
	return &inTheWay{Held: *r.Lost}, nil
}

// shared reports whether a board room of project key has members other
// than this node.
func (s *Service) shared(key string) bool {
	s.mu.Lock()
	p, err := s.load(key)
	var ids []identity.RoomID
	if err == nil {
		for id := range p.cursors {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, in := range s.cfg.Rooms.List() {
		if slices.Contains(ids, in.ID) && slices.ContainsFunc(in.Members, func(m peer.ID) bool { return m != s.cfg.Self }) {
			return true
		}
	}
	return false
}

func heldBy(live []Held, holder string) []Held {
	out := []Held{}
	for _, h := range live {
		if h.Holder == holder {
			out = append(out, h)
		}
	}
	return out
}

// heldForms returns paths with each folder that agent holds under its
// other form (folderForm: FOLDER/** for FOLDER, or the other way round)
// given as it holds it, and whether it changed any.
func (s *Service) heldForms(agent identity.AgentName, key string, paths []string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load(key)
	if err != nil {
		return paths, false
	}
	var have, keys []string
	for _, h := range heldBy(p.state.Live(s.cfg.Now()), s.holder(agent)) {
		have, keys = append(have, h.Path), append(keys, h.key)
	}
	out, changed := slices.Clone(paths), false
	for i, q := range out {
		if h := asHeld(have, keys, q); h != q && !slices.Contains(out, h) {
			out[i], changed = h, true
		}
	}
	return out, changed
}

// asHeld is q as have holds it: q; else the same path in another case or
// Unicode form (key), as the fold takes it for q; else its other form as
// a folder (folderForm), in any case, when have holds that one. keys are
// have's key forms, in its order (made once: a claim asks this of each of
// up to MaxPaths paths, against up to all its agent holds).
func asHeld(have, keys []string, q string) string {
	if slices.Contains(have, q) {
		return q
	}
	for _, c := range []string{q, folderForm(q)} {
		if c == "" {
			continue
		}
		k := key(c)
		if i := slices.Index(keys, k); i >= 0 {
			return have[i]
		}
	}
	return q
}

// folderForm is q's other form as a folder: FOLDER for FOLDER/**, and
// FOLDER/** for a FOLDER with no glob; "" for any other path.
func folderForm(q string) string {
	if f, ok := strings.CutSuffix(q, "/**"); ok && f != "" && !strings.ContainsAny(f, "*?[") {
		return f
	}
	if q != "" && !strings.ContainsAny(q, "*?[") {
		return q + "/**"
	}
	return ""
}

// ReleaseResult is a release made.
type ReleaseResult struct {
	Event    string
	Released []string // the paths taken off
	Held     []Held   // the agent's claims left
}

// Release takes agent's claims on paths off the board (none: all of
// them). Each path must be one the agent holds, as it claimed it.
func (s *Service) Release(ctx context.Context, agent identity.AgentName, key string, paths []string) (ReleaseResult, error) {
	if err := checkProject(key); err != nil {
		return ReleaseResult{}, err
	}
	paths, err := CheckPaths(paths, false)
	if err != nil {
		return ReleaseResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load(key)
	if err != nil {
		return ReleaseResult{}, err
	}
	holder := s.holder(agent)
	live := p.state.Live(s.cfg.Now())
	mine := heldBy(live, holder)
	var have []string
	for _, h := range mine {
		have = append(have, h.Path)
	}
	// A path another agent holds: say whose it is, and that only its
	// holder releases it (it ends by itself at its expiry).
	othersFirst := func() string {
		for _, q := range paths {
			for _, h := range live {
				if h.Path == q && h.Holder != holder {
					return fmt.Sprintf("; %s is %s's until %s: only its holder releases it, else it ends then", q, h.Holder, time.UnixMilli(h.Expires).UTC().Format(time.RFC3339))
				}
			}
		}
		return ""
	}
	if len(have) == 0 {
		return ReleaseResult{}, fmt.Errorf("%w: %s holds nothing on the board of %s%s", ErrNotHeld, agent, key, othersFirst())
	}
	released := have
	if len(paths) > 0 {
		paths = slices.Clone(paths)
		keys := pathKeys(have)
		for i, q := range paths {
			// A folder claimed before it was made is held as FOLDER, and
			// given as FOLDER/** once it exists (and the other way round
			// once it is gone): both name what is under it, so either
			// releases the claim as it was made.
			q = asHeld(have, keys, q)
			paths[i] = q
			if !slices.Contains(have, q) {
				return ReleaseResult{}, fmt.Errorf("%w: %s does not hold %s (it holds %s)%s", ErrNotHeld, agent, q, strings.Join(have, ", "), othersFirst())
			}
		}
		released = paths
	}
	body, err := EncodeRelease(ReleaseBody{Paths: paths})
	if err != nil {
		return ReleaseResult{}, err
	}
	if err := s.checkWeight(p, KindRelease, Weight(paths, "")); err != nil {
		return ReleaseResult{}, err
	}
	id, err := s.room(ctx, p, agent)
	if err != nil {
		return ReleaseResult{}, err
	}
	eid, err := s.cfg.Rooms.Post(ctx, id, agent, rooms.KindRelease, body)
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("board: post release: %w", err)
	}
	if _, err := s.load(key); err != nil {
		return ReleaseResult{}, err
	}
	return ReleaseResult{Event: eid.String(), Released: released, Held: heldBy(p.state.Live(s.cfg.Now()), holder)}, nil
}

// View is a project's board as it is now.
type View struct {
	Project string
	Rooms   []string // its board rooms
	Claims  []Held   // live claims, by path and holder
}

// Board returns the project's board.
func (s *Service) Board(_ context.Context, key string) (View, error) {
	if err := checkProject(key); err != nil {
		return View{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load(key)
	if err != nil {
		return View{}, err
	}
	v := View{Project: key, Rooms: []string{}, Claims: p.state.Live(s.cfg.Now())}
	for id := range p.cursors {
		v.Rooms = append(v.Rooms, string(id))
	}
	slices.Sort(v.Rooms)
	return v, nil
}

// History returns the project's claims and releases in fold order; with
// path, those whose paths overlap it.
func (s *Service) History(_ context.Context, key, path string) ([]Record, error) {
	if err := checkProject(key); err != nil {
		return nil, err
	}
	if path != "" {
		if err := CheckPattern(path); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load(key)
	if err != nil {
		return nil, err
	}
	src := p
	if p.state.Trimmed() {
		// The fold let go of the board's old entries: fold it all again,
		// from its rooms' events, for this read.
		src = newProject(key)
		for id := range p.cursors {
			src.cursors[id] = 0
		}
		if err := s.read(src); err != nil {
			return nil, err
		}
	}
	h := src.state.History(path)
	later := slices.Clone(src.later)
	slices.SortFunc(later, func(a, b laterRef) int { return cmp.Or(cmp.Compare(a.Time, b.Time), strings.Compare(a.ID, b.ID)) })
	for _, l := range later {
		v, ok, err := s.fetchLater(l)
		if err != nil {
			return nil, err
		}
		if !ok || membership(v) {
			continue
		}
		r := Record{ID: l.ID, Room: string(v.Room), Holder: string(v.Agent) + "@" + v.Author.String(), Time: v.Time, Kind: string(v.Kind),
			Bad: fmt.Sprintf("dated %s ahead of this node's clock: folded once the clock is within %s of it",
				time.Duration(v.Time-s.cfg.Now().UnixMilli())*time.Millisecond, MaxAhead)}
		if r.Kind == KindClaim {
			if c, err := DecodeClaim(v.Body); err == nil {
				r.Paths, r.Note = c.Paths, c.Note
			}
		} else if rel, err := DecodeRelease(v.Body); err == nil {
			r.Paths = rel.Paths
		}
		if path == "" || slices.ContainsFunc(r.Paths, historyMatch(path)) {
			h = append(h, r)
		}
	}
	return h, nil
}
