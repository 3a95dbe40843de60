package board

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kinds of Entry, as in the room events.
const (
	KindClaim   = "claim"
	KindRelease = "release"
)

// Entry is one claim or release event of a board room.
type Entry struct {
	ID     string // the event ID, in its string form
	Room   string
	Holder string // the agent, NAME@PEER_ID
	Time   int64  // the author's clock, unix milliseconds
	Kind   string // KindClaim or KindRelease
	Body   []byte
}

func (e *Entry) before(o *Entry) bool {
	return cmp.Or(cmp.Compare(e.Time, o.Time), strings.Compare(e.ID, o.ID)) < 0
}

// Held is one path an agent holds.
type Held struct {
	Path    string `json:"path"`
	Holder  string `json:"holder"`
	Note    string `json:"note"`
	Since   int64  `json:"since"`   // unix ms: the first claim of this run
	Expires int64  `json:"expires"` // unix ms
	Event   string `json:"event"`   // the claim that set the expiry
	Room    string `json:"room"`
	prefix  string // literalPrefix(Path)
}

// Record is one event of the board's history, with what came of it.
type Record struct {
	ID      string   `json:"id"`
	Room    string   `json:"room"`
	Holder  string   `json:"holder"`
	Time    int64    `json:"time"`
	Kind    string   `json:"kind"`
	Paths   []string `json:"paths"`
	Note    string   `json:"note,omitempty"`
	Expires int64    `json:"expires,omitempty"` // claim: time + ttl
	// Lost is set on a claim that lost to an earlier one it overlaps.
	Lost *Held `json:"lost_to,omitempty"`
	// Bad says why a malformed body was ignored.
	Bad string `json:"bad,omitempty"`
}

// State folds a board's claims and releases. It is not safe for
// concurrent use.
type State struct {
	entries []*Entry          // sorted by (Time, ID)
	ids     map[string]bool   // IDs in entries
	applied int               // entries[:applied] are folded into held and records
	held    []*Held           // as of the last applied entry's time
	records map[string]Record // by event ID
}

// NewState returns an empty board.
func NewState() *State {
	return &State{ids: map[string]bool{}, records: map[string]Record{}}
}

// Len is the number of events taken in.
func (s *State) Len() int { return len(s.entries) }

// Add takes in an event; an event already taken in is ignored.
func (s *State) Add(e Entry) {
	if s.ids[e.ID] {
		return
	}
	s.ids[e.ID] = true
	n := len(s.entries)
	if n == 0 || s.entries[n-1].before(&e) {
		s.entries = append(s.entries, &e)
		return
	}
	i, _ := slices.BinarySearchFunc(s.entries, &e, func(a, b *Entry) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	s.entries = slices.Insert(s.entries, i, &e)
	if i < s.applied {
		s.applied, s.held, s.records = 0, nil, map[string]Record{} // fold again from the start
	}
}

func (s *State) catchUp() {
	for ; s.applied < len(s.entries); s.applied++ {
		s.apply(s.entries[s.applied])
	}
}

func (s *State) apply(e *Entry) {
	s.held = slices.DeleteFunc(s.held, func(h *Held) bool { return h.Expires <= e.Time })
	rec := Record{ID: e.ID, Room: e.Room, Holder: e.Holder, Time: e.Time, Kind: e.Kind}
	defer func() { s.records[e.ID] = rec }()
	switch e.Kind {
	case KindClaim:
		c, err := DecodeClaim(e.Body)
		if err != nil {
			rec.Bad = err.Error()
			return
		}
		rec.Paths, rec.Note, rec.Expires = c.Paths, c.Note, e.Time+c.TTL.Milliseconds()
		if h := conflict(s.held, e.Holder, c.Paths); h != nil {
			cp := *h
			rec.Lost = &cp
			return
		}
		for _, p := range c.Paths {
			since := e.Time
			s.held = slices.DeleteFunc(s.held, func(h *Held) bool {
				if h.Holder == e.Holder && h.Path == p {
					since = h.Since
					return true
				}
				return false
			})
			s.held = append(s.held, &Held{Path: p, Holder: e.Holder, Note: c.Note, Since: since,
				Expires: rec.Expires, Event: e.ID, Room: e.Room, prefix: literalPrefix(p)})
		}
	case KindRelease:
		r, err := DecodeRelease(e.Body)
		if err != nil {
			rec.Bad = err.Error()
			return
		}
		rec.Paths = r.Paths
		s.held = slices.DeleteFunc(s.held, func(h *Held) bool {
			return h.Holder == e.Holder && (len(r.Paths) == 0 || slices.Contains(r.Paths, h.Path))
		})
	default:
		rec.Bad = fmt.Sprintf("unknown kind %q", e.Kind)
	}
}

// conflict returns a claim of another agent among held that overlaps one
// of paths.
func conflict(held []*Held, holder string, paths []string) *Held {
	return conflictAt(held, holder, paths, 0)
}

// conflictAt is conflict among the claims that expire after ms.
func conflictAt(held []*Held, holder string, paths []string, ms int64) *Held {
	prefixes := make([]string, len(paths))
	for i, p := range paths {
		prefixes[i] = literalPrefix(p)
	}
	for _, h := range held {
		if h.Expires <= ms || h.Holder == holder {
			continue
		}
		for i, p := range paths {
			if overlap(p, prefixes[i], h.Path, h.prefix) {
				return h
			}
		}
	}
	return nil
}

// Live returns the claims held at now, by path and holder.
func (s *State) Live(now time.Time) []Held {
	s.catchUp()
	ms := now.UnixMilli()
	out := make([]Held, 0, len(s.held))
	for _, h := range s.held {
		if h.Expires > ms {
			out = append(out, *h)
		}
	}
	slices.SortFunc(out, func(a, b Held) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Holder, b.Holder))
	})
	return out
}

// Conflict returns the live claim of another agent that a claim of paths
// by holder at now would overlap, or nil.
func (s *State) Conflict(holder string, paths []string, now time.Time) *Held {
	s.catchUp()
	if h := conflictAt(s.held, holder, paths, now.UnixMilli()); h != nil {
		cp := *h
		return &cp
	}
	return nil
}

// History returns the board's events in fold order; with path set only
// those with a path overlapping it (a release of everything counts).
func (s *State) History(path string) []Record {
	s.catchUp()
	out := []Record{}
	for _, e := range s.entries {
		r := s.records[e.ID]
		if path != "" && !(r.Kind == KindRelease && len(r.Paths) == 0) &&
			!slices.ContainsFunc(r.Paths, func(p string) bool { return Overlap(p, path) }) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Record returns what came of one event.
func (s *State) Record(id string) (Record, bool) {
	s.catchUp()
	r, ok := s.records[id]
	return r, ok
}

// Lost returns holder's claims that lost to an earlier one, in fold order.
func (s *State) Lost(holder string) []Record {
	s.catchUp()
	var out []Record
	for _, e := range s.entries {
		if r := s.records[e.ID]; r.Lost != nil && r.Holder == holder {
			out = append(out, r)
		}
	}
	return out
}
