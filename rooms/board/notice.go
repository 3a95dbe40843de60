package board

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Notices tell an agent what happened on the board that concerns it.
const (
	// NoticeFree: paths the agent was refused are free now.
	NoticeFree = "claim_free"
	// NoticeExpiring: a claim of the agent ends soon.
	NoticeExpiring = "claim_expiring"
	// NoticeLost: a claim of the agent lost to an earlier one its node
	// had not heard of when it claimed (made during a partition, or at
	// nearly the same time on another node).
	NoticeLost = "claim_lost"
	// NoticeContested: another agent's claim made where the agent's was
	// not yet known lost to it (the other side of NoticeLost): that agent
	// may have changed the paths before it heard.
	NoticeContested = "claim_contested"
)

// ExpiringWithin is how long before its expiry a claim is said to end
// soon (a claim whose TTL is shorter: at half its TTL).
const ExpiringWithin = 5 * time.Minute

// watchTTL is how long a refused claim is watched for its paths to go free.
const watchTTL = time.Hour

// Notice is one thing the board tells an agent.
type Notice struct {
	Kind    string
	ID      string // unique per notice
	Project string
	Paths   []string
	Text    string
	Time    int64 // unix ms
	Held    *Held // the claim concerned (expiring: the agent's; lost: the winner's; free: the one that was in the way)
}

type watch struct {
	project string
	paths   []string
	note    string
	ttl     time.Duration
	was     Held
	until   time.Time
	lost    bool // a claim that lost at a heal, not one refused
	// Where the store keeps it (schema.BoardWatch): its number among its
	// agent's, and whether it is stored.
	seq    uint64
	stored bool
}

// maxWatchesPerAgent and maxWatches bound the refused claims watched,
// per agent and over the service; past a bound the oldest is dropped
// (its agent is then not told when its paths go free).
const (
	maxWatchesPerAgent = 32
	maxWatches         = 4096
)

// watchLocked remembers that agent was refused paths because of h, in
// memory and in the store. It drops the expired watches of every agent
// first, and the oldest past maxWatchesPerAgent and maxWatches after.
// It returns the watch. Callers hold s.mu.
func (s *Service) watchLocked(agent identity.AgentName, project string, paths []string, note string, ttl time.Duration, h Held, lost bool) *watch {
	now := s.cfg.Now()
	var ops []schema.Op
	for a, ws := range s.watches {
		ws = slices.DeleteFunc(ws, func(w *watch) bool {
			if now.After(w.until) {
				ops = append(ops, s.unstoreOps(a, w)...)
				return true
			}
			return false
		})
		if len(ws) == 0 {
			delete(s.watches, a)
			continue
		}
		s.watches[a] = ws
	}
	ws := slices.DeleteFunc(s.watches[agent], func(w *watch) bool {
		if w.project == project && slices.Equal(w.paths, paths) {
			ops = append(ops, s.unstoreOps(agent, w)...)
			return true
		}
		return false
	})
	w := &watch{project: project, paths: paths, note: note, ttl: ttl, was: h, until: now.Add(watchTTL), lost: lost}
	ops = append(ops, s.storeOps(agent, w)...)
	ws = append(ws, w)
	if d := len(ws) - maxWatchesPerAgent; d > 0 {
		ops = append(ops, s.unstoreOps(agent, ws[:d]...)...)
		ws = slices.Delete(ws, 0, d)
	}
	s.watches[agent] = ws
	ops = append(ops, s.overTotalLocked()...)
	_ = s.applyWatches(ops)
	return w
}

// unwatchLocked forgets agent's refused claims on project whose paths it
// holds now (all of them among paths). Callers hold s.mu.
func (s *Service) unwatchLocked(agent identity.AgentName, project string, paths []string) {
	var ops []schema.Op
	ws := slices.DeleteFunc(s.watches[agent], func(w *watch) bool {
		if w.project == project && !slices.ContainsFunc(w.paths, func(p string) bool { return !slices.Contains(paths, p) }) {
			ops = append(ops, s.unstoreOps(agent, w)...)
			return true
		}
		return false
	})
	if len(ws) == 0 {
		delete(s.watches, agent)
	} else {
		s.watches[agent] = ws
	}
	_ = s.applyWatches(ops)
}

// noteFor is holder's note as told to agent: blank when holder is muted
// here (Config.Hidden), except to the user.
func (s *Service) noteFor(agent identity.AgentName, holder, note string) string {
	if agent != identity.HumanAgent && s.cfg.Hidden != nil && s.cfg.Hidden(holder) {
		return ""
	}
	return note
}

// Notices returns what the board has to tell agent; with take they are
// handed out (each is told once).
func (s *Service) Notices(agent identity.AgentName, take bool) []Notice {
	return s.NoticesWithin(agent, take, nil)
}

// NoticesWithin is Notices, of those that fits takes (nil: all): one it
// refuses is neither listed nor told, and comes again. A member's claims
// that lost to this agent's are told to it with their paths and notes
// (NoticeContested), so a take of them must fit what an agent's result
// holds: before, a member's twenty long claims, made while the nodes
// were apart, went whole into one result of 1.3 MB.
func (s *Service) NoticesWithin(agent identity.AgentName, take bool, fits func(Notice) bool) []Notice {
	if fits == nil {
		fits = func(Notice) bool { return true }
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	ms := now.UnixMilli()
	holder := s.holder(agent)
	var out []Notice
	told := s.pruneToldLocked(ms) // the notices told now or expired, in the store
	defer func() { _ = s.applyStore("notices told", told) }()
	// Refused claims whose paths are free now.
	ws := s.watches[agent]
	keep := ws[:0]
	var ops []schema.Op // the watches told or expired, off the store
	for _, w := range ws {
		if now.After(w.until) {
			ops = append(ops, s.unstoreOps(agent, w)...)
			continue
		}
		p, err := s.load(w.project)
		if err != nil {
			keep = append(keep, w)
			continue
		}
		if in, err := s.conflict(p, holder, w.paths, w.ttl); in != nil || err != nil {
			keep = append(keep, w)
			continue
		}
		why := "was released"
		if w.was.Expires <= ms {
			why = "expired"
		}
		earlier := "You were refused it earlier"
		if w.lost {
			earlier = "Your claim on it lost to theirs earlier"
		}
		no := Notice{Kind: NoticeFree, ID: "free:" + w.was.Event + ":" + strings.Join(w.paths, ","), Project: w.project,
			Paths: w.paths, Time: ms, Held: &w.was,
			Text: fmt.Sprintf("%s is free now: %s's claim on %s %s. %s (your note: %q).",
				listPaths(w.paths), w.was.Holder, w.was.Path, why, earlier, w.note)}
		if !fits(no) {
			keep = append(keep, w)
			continue
		}
		out = append(out, no)
		if !take {
			keep = append(keep, w)
		} else {
			ops = append(ops, s.unstoreOps(agent, w)...)
		}
	}
	if len(keep) == 0 {
		delete(s.watches, agent)
	} else {
		s.watches[agent] = keep
	}
	_ = s.applyWatches(ops)
	// Own claims: ending soon, or lost at a heal.
	for _, key := range s.boardKeys() {
		p, err := s.load(key)
		if err != nil {
			continue
		}
		for _, h := range p.state.Live(now) {
			if h.Holder != holder {
				continue
			}
			within := min(ExpiringWithin, time.Duration(h.Expires-h.Since)*time.Millisecond/2)
			if time.Duration(h.Expires-ms)*time.Millisecond > within {
				continue
			}
			id := "expiring:" + h.Event + ":" + h.Path
			if _, ok := s.told[id]; ok {
				continue
			}
			hc := h
			no := Notice{Kind: NoticeExpiring, ID: id, Project: key, Paths: []string{h.Path}, Time: ms, Held: &hc,
				Text: fmt.Sprintf("Your claim on %s ends at %s (in %s). Claim it again to keep it, or release it if you are done.",
					h.Path, time.UnixMilli(h.Expires).UTC().Format(time.RFC3339), time.Duration(h.Expires-ms)*time.Millisecond/time.Second*time.Second)}
			if !fits(no) {
				continue
			}
			out = append(out, no)
			if take {
				told = append(told, s.tellLocked(id, h.Expires)...)
			}
		}
		for _, r := range p.state.Lost(holder) {
			id := "lost:" + r.ID
			if _, ok := s.told[id]; ok || r.Expires <= ms {
				continue
			}
			// Dated by the claim that lost, so the notice keeps its time
			// however often it is read.
			won := *r.Lost
			won.Note = s.noteFor(agent, won.Holder, won.Note)
			no := Notice{Kind: NoticeLost, ID: id, Project: key, Paths: r.Paths, Time: r.Time, Held: &won,
				Text: fmt.Sprintf("Your claim on %s (%q) lost to %s's earlier claim on %s (%q): your node had not yet heard of it when you claimed (the two claims were made at nearly the same time, the two nodes were apart, or they had only just become contacts). It is not yours: agree with them, or wait.",
					listPaths(r.Paths), r.Note, won.Holder, won.Path, won.Note)}
			if !fits(no) {
				continue
			}
			out = append(out, no)
			if take {
				told = append(told, s.tellLocked(id, r.Expires)...)
				// Told to wait: watched as a refused claim is, so that it
				// is told when its paths go free.
				s.watchLocked(agent, key, r.Paths, r.Note, time.Duration(r.Expires-r.Time)*time.Millisecond, *r.Lost, true)
			}
		}
		for _, r := range p.state.Beaten(holder) {
			id := "contested:" + r.ID
			if _, ok := s.told[id]; ok || r.Expires <= ms {
				continue
			}
			lost := Held{Path: r.Paths[0], Holder: r.Holder, Note: s.noteFor(agent, r.Holder, r.Note), Since: r.Time, Expires: r.Expires, Event: r.ID, Room: r.Room}
			no := Notice{Kind: NoticeContested, ID: id, Project: key, Paths: r.Paths, Time: r.Time, Held: &lost,
				Text: fmt.Sprintf("%s also claimed %s (%q) before its node had heard of your claim on %s (the two nodes were apart, or the claims were made at nearly the same time). Yours was the earlier and took it; theirs lost, and they are told so, but they may have changed those files before they heard: check with them before you commit.",
					r.Holder, listPaths(r.Paths), lost.Note, r.Lost.Path)}
			if !fits(no) {
				continue
			}
			out = append(out, no)
			if take {
				told = append(told, s.tellLocked(id, r.Expires)...)
			}
		}
	}
	return out
}

// noticePaths is the most paths a notice's text names; the notice's Paths
// lists them all.
const noticePaths = 3

// listPaths names the first noticePaths of paths and counts the rest: a
// claim may hold 64 paths of 512 bytes, which the text repeated whole.
func listPaths(paths []string) string {
	if len(paths) <= noticePaths {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:noticePaths], ", "), len(paths)-noticePaths)
}
