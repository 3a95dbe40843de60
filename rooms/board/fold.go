package board

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Kinds of Entry, as in the room events.
const (
	KindClaim   = "claim"
	KindRelease = "release"
	// KindRemoved: a board room's removal of a node by another, its
	// creator (Holder is "@" and the removed node's peer ID). See
	// State.off for what it ends: the node's claims in the board rooms
	// that creator made, or on the whole board when that creator is the
	// node's host.
	KindRemoved = "removed"
	// KindInvited: the room's invite of a node (Holder as KindRemoved).
	KindInvited = "invited"
	// KindCreated: the room's create event (Holder is "@" and its
	// creator's peer ID): who has authority over the room.
	KindCreated = "created"
	// KindJoined: a node's join of the room (Holder is "@" and its peer
	// ID), signed and dated by that node: the first board room a node
	// joined or created names its host.
	KindJoined = "joined"
)

// member reports whether kind is one of the membership kinds, which make
// no record of their own.
func member(kind string) bool {
	return kind == KindRemoved || kind == KindInvited || kind == KindCreated || kind == KindJoined
}

// Entry is one claim or release event of a board room.
type Entry struct {
	ID     string // the event ID, in its string form
	Room   string
	Holder string // the agent, NAME@PEER_ID
	Time   int64  // the author's clock, unix milliseconds
	Kind   string // KindClaim or KindRelease
	Body   []byte // State.Add decodes it and lets it go

	// The body as decoded once, when the entry is taken in (a fold that
	// goes back applies it again). The raw body is not kept: a member of a
	// board room chooses its size, up to an event's largest, also for a
	// body the fold refuses.
	claim   ClaimBody
	release ReleaseBody
	keys    []string // key of each path of claim or release, in its order
	bad     string   // why the body is ignored, if it is (at most maxBad bytes)
	// weight is what the body counts against its node's MaxNodeWeight,
	// and over is set once the claims and releases of its node in the
	// NodeWindow before it (itself included) weigh more (State.weigh): it
	// is ignored, and its body let go of. More entries only add weight,
	// so an entry over stays so.
	weight int
	over   bool
}

// overWeight is the reason a claim past its node's MaxNodeWeight, or a
// release past its MaxNodeReleaseWeight, is ignored.
var overWeight = map[string]string{
	KindClaim: fmt.Sprintf("its node's claims of the %v before it weigh more than the board keeps for one node (%d KiB: paths and notes, %d bytes for each event and %d for each path)",
		NodeWindow, MaxNodeWeight>>10, entryWeight, pathWeight),
	KindRelease: fmt.Sprintf("its node's releases of the %v before it weigh more than the board keeps for one node (%d KiB: paths, %d bytes for each event and %d for each path)",
		NodeWindow, MaxNodeReleaseWeight>>10, entryWeight, pathWeight),
}

// maxBad bounds the reason kept for a body the fold refuses.
const maxBad = 200

// parse decodes the entry's body for apply, and drops it.
func (e *Entry) parse() {
	var err error
	switch e.Kind {
	case KindClaim:
		e.claim, err = DecodeClaim(e.Body)
		e.weight = Weight(e.claim.Paths, e.claim.Note)
		e.keys = pathKeys(e.claim.Paths)
	case KindRelease:
		e.release, err = DecodeRelease(e.Body)
		e.weight = Weight(e.release.Paths, "")
		e.keys = pathKeys(e.release.Paths)
	case KindRemoved, KindInvited, KindCreated, KindJoined:
	default:
		err = fmt.Errorf("unknown kind %q", e.Kind)
	}
	if err != nil {
		e.bad = strings.ToValidUTF8(truncate(err.Error(), maxBad), "")
	}
	e.Body = nil
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.Clone(s[:n])
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
	key     string // key(Path), the form overlaps are decided in
	prefix  string // literalPrefix(key)
}

// keys sets h's key and prefix from its path.
func (h *Held) keys() { h.setKey(key(h.Path)) }

// setKey sets h's key, key(h.Path), and its prefix.
func (h *Held) setKey(k string) {
	h.key = k
	h.prefix = literalPrefix(k)
}

// pathKeys returns key of each of paths, in their order.
func pathKeys(paths []string) []string {
	ks := make([]string, len(paths))
	for i, p := range paths {
		ks[i] = key(p)
	}
	return ks
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
	// Ended is what a release took off the board: the holder's live
	// claims it named, or all of them for a release of everything.
	Ended []string `json:"ended,omitempty"`
	// Bad says why the entry is not folded: a malformed body (for good),
	// or a date too far past this node's clock (until it gets near).
	Bad string `json:"bad,omitempty"`
}

// State folds a board's claims and releases. It is not safe for
// concurrent use.
//
// An entry dated before the last one folded makes the fold go back, to
// the last checkpoint before it (the held claims as they were after an
// entry, kept every few entries), and fold again from there only until
// the held claims are again what the fold had reached at the same place
// before: the same entries then follow the same state, so the rest of
// the fold stands. An entry dated back changes the fold for at most as
// long as the claims it makes or ends are held (MaxTTL, unless a claim
// it beat or let through was renewed since), not the whole board's.
type State struct {
	entries []*Entry          // sorted by (Time, ID)
	ids     map[string]bool   // IDs in entries
	applied int               // entries[:applied] are folded into held and records
	held    []*Held           // as of the last applied entry's time
	idx     heldIndex         // of held
	minExp  int64             // no claim in held expires before it
	records map[string]Record // by event ID

	// members are the membership entries (member) taken in, by the node
	// (peer ID) they name, sorted; creators, the creator of each room
	// whose create event was taken in. Neither is trimmed.
	members  map[string][]*Entry
	creators map[string]*Entry

	// weights are the claims and releases taken in (not malformed) of
	// each node, of the last NodeWindow at least, in fold order, with
	// what they weigh; hold is the last entry whose over an entry dated
	// back set: the fold meets no fold before until it has folded it.
	weights map[string]*nodeWeights
	hold    *Entry

	// cps are states of this fold (n <= applied, ascending); ahead, states
	// of the fold before the last entries dated back, past all of them
	// (n > applied, ascending), where the two may meet again.
	cps, ahead []checkpoint
	fold       int // this fold's number: one more each time the fold goes back
	every      int // entries folded between two checkpoints, at least (more on a board past maxCps/2 times every)
	maxCps     int // past it, every other checkpoint goes
	refolds    int // entries folded again since the State was made

	// Trim lets go of the entries before a checkpoint long past; base is
	// the last of them (trimmed is set once it did). An entry dated at or
	// before base cannot be folded here any more: it makes the State
	// stale, and the caller folds the board again from its events.
	trimmed bool
	base    Entry
	stale   bool
}

// checkpoint is the held claims of fold number fold after entries[:n],
// in a slice of its own that nothing changes.
type checkpoint struct {
	n, fold int
	held    []*Held
}

// nodeWeights are a node's claims and releases by fold order: sum is
// what those before let go of (Trim) weighed, and each item's sum what
// they weigh up to it, that one included.
type nodeWeights struct {
	sum   int
	items []weighed
}

type weighed struct {
	time        int64
	id          string
	weight, sum int
	e           *Entry // nil once Trim let go of it
}

// before returns what the node's items before items[i] weigh.
func (w *nodeWeights) before(i int) int {
	if i == 0 {
		return w.sum
	}
	return w.items[i-1].sum
}

// since returns the index of the first item dated after t.
func (w *nodeWeights) since(t int64) int {
	i, _ := slices.BinarySearchFunc(w.items, t, func(x weighed, t int64) int { return cmp.Compare(x.time, t+1) })
	return i
}

// over reports whether items[i] and the node's items in the NodeWindow
// before it weigh more than limit.
func (w *nodeWeights) over(i, limit int) bool {
	return w.items[i].sum-w.before(w.since(w.items[i].time-NodeWindow.Milliseconds())) > limit
}

// weightKey is the key of a node's claims' or releases' weights: each
// kind counts against its own limit (nodeLimit).
func weightKey(node, kind string) string { return node + "\x00" + kind }

// nodeLimit is what a node's events of kind may weigh in NodeWindow.
func nodeLimit(kind string) int {
	if kind == KindRelease {
		return MaxNodeReleaseWeight
	}
	return MaxNodeWeight
}

// weigh counts e, a claim or release just inserted, against its node's
// MaxNodeWeight: it and the node's entries after it in NodeWindow may be
// over now. Those folded are folded again: the fold went back for e.
func (s *State) weigh(e *Entry) {
	if e.bad != "" || e.Kind != KindClaim && e.Kind != KindRelease {
		return
	}
	node := weightKey(memberKey(e.Holder), e.Kind)
	w := s.weights[node]
	if w == nil {
		w = &nodeWeights{}
		s.weights[node] = w
	}
	limit := nodeLimit(e.Kind)
	i, _ := slices.BinarySearchFunc(w.items, e, func(x weighed, e *Entry) int {
		return cmp.Or(cmp.Compare(x.time, e.Time), strings.Compare(x.id, e.ID))
	})
	w.items = slices.Insert(w.items, i, weighed{time: e.Time, id: e.ID, weight: e.weight, sum: w.before(i) + e.weight, e: e})
	end := e.Time + NodeWindow.Milliseconds()
	for j := i; j < len(w.items); j++ {
		x := &w.items[j]
		if j > i {
			x.sum += e.weight
		}
		if x.time >= end || x.e == nil || x.e.over || !w.over(j, limit) {
			continue
		}
		x.e.over, x.e.claim, x.e.release, x.e.keys = true, ClaimBody{}, ReleaseBody{}, nil
		if j > i && (s.hold == nil || s.hold.before(x.e)) {
			s.hold = x.e
		}
	}
}

// NodeWeight returns what the claims and releases of node (a peer ID)
// taken in and dated in the NodeWindow up to t weigh, those ignored
// included: a claim or release of weight w dated t is ignored when this
// and w are more than MaxNodeWeight.
func (s *State) NodeWeight(node, kind string, t int64) int {
	w := s.weights[weightKey(node, kind)]
	if w == nil {
		return 0
	}
	return w.before(w.since(t)) - w.before(w.since(t-NodeWindow.Milliseconds()))
}

// Checkpoints come every cpEvery entries, or a 128th of the board when that
// is more; at most cpMax are kept.
const (
	cpEvery = 64
	cpMax   = 256
)

// NewState returns an empty board.
func NewState() *State {
	s := &State{ids: map[string]bool{}, records: map[string]Record{}, members: map[string][]*Entry{}, creators: map[string]*Entry{}, weights: map[string]*nodeWeights{}, every: cpEvery, maxCps: cpMax}
	s.indexHeld()
	return s
}

// Len is the number of events taken in.
func (s *State) Len() int { return len(s.entries) }

// Add takes in an event; an event already taken in is ignored.
func (s *State) Add(e Entry) {
	if s.ids[e.ID] {
		return
	}
	if s.trimmed && !s.base.before(&e) {
		s.stale = true
		return
	}
	s.ids[e.ID] = true
	e.parse()
	if !member(e.Kind) {
		s.insert(&e)
		s.weigh(&e)
		return
	}
	k := memberKey(e.Holder)
	ms := s.members[k]
	i, _ := slices.BinarySearchFunc(ms, &e, order)
	s.members[k] = slices.Insert(ms, i, &e)
	// A membership entry decides how the claims after it fold (a room's
	// creator, those of the whole room, whatever their dates), but
	// changes no held claim where it stands: the fold goes back for it
	// (to the start for a room's creator), and on to the end, without
	// meeting the fold before.
	at := s.insert(&e)
	if e.Kind == KindCreated {
		if c := s.creators[e.Room]; c == nil || e.before(c) {
			s.creators[e.Room] = &e
			at = 0
		}
	}
	s.refoldFrom(at)
}

// refoldFrom takes the fold back to the last checkpoint at or before
// entries[i], if it went past it, to fold from there to the end: it meets
// no fold before.
func (s *State) refoldFrom(i int) {
	s.ahead = nil
	if i >= s.applied {
		return
	}
	k, _ := slices.BinarySearchFunc(s.cps, i+1, func(c checkpoint, n int) int { return cmp.Compare(c.n, n) })
	s.cps = s.cps[:k]
	s.applied, s.held = 0, nil
	if k > 0 {
		s.applied, s.held = s.cps[k-1].n, slices.Clone(s.cps[k-1].held)
	}
	s.fold++
	s.indexHeld()
}

// order sorts entries by (time, ID).
func order(a, b *Entry) int {
	if a.before(b) {
		return -1
	}
	return 1
}

// insert puts e in entries, taking the fold back if it is dated before
// entries folded, and returns its index.
func (s *State) insert(e *Entry) int {
	n := len(s.entries)
	if n == 0 || s.entries[n-1].before(e) {
		s.entries = append(s.entries, e)
		return n
	}
	i, _ := slices.BinarySearchFunc(s.entries, e, order)
	s.entries = slices.Insert(s.entries, i, e)
	s.insertedAt(i)
	return i
}

// Stale reports whether an entry was dated at or before the entries Trim
// let go of: the State no longer folds the whole board, and must be made
// again from all its entries.
func (s *State) Stale() bool { return s.stale }

// Trimmed reports whether Trim let go of entries: History lists only
// those kept.
func (s *State) Trimmed() bool { return s.trimmed }

// Trim folds the entries taken in, then lets go of those dated more than
// keep before the last one, up to a checkpoint, which becomes where the
// fold starts. What the fold holds and tells stays the same: the entries
// after the checkpoint follow the same state. An entry dated back as far
// as those let go of makes the State stale (Stale). keep should be at
// least MaxTTL + MaxAhead, so that every claim live at the clock of the
// node, and every entry a fold that goes back usually reaches, is kept.
func (s *State) Trim(keep time.Duration) {
	s.catchUp()
	if len(s.entries) == 0 || len(s.ahead) > 0 {
		return
	}
	cutoff := s.entries[len(s.entries)-1].Time - keep.Milliseconds()
	// The last checkpoint after entries all dated before cutoff.
	j, _ := slices.BinarySearchFunc(s.cps, cutoff, func(c checkpoint, t int64) int {
		if c.n == 0 || s.entries[c.n-1].Time < t {
			return -1
		}
		return 1
	})
	if j == 0 || s.cps[j-1].n == 0 {
		return
	}
	c := s.cps[j-1]
	k := c.n
	for _, e := range s.entries[:k] {
		delete(s.ids, e.ID)
		delete(s.records, e.ID)
	}
	// What a node's entries weigh counts while in NodeWindow of those kept.
	from := s.entries[k-1].Time - NodeWindow.Milliseconds()
	for node, w := range s.weights {
		n := w.since(from)
		w.sum = w.before(n)
		w.items = slices.Delete(w.items, 0, n)
		for j := range w.items {
			if x := &w.items[j]; x.e != nil && !s.entries[k-1].before(x.e) {
				x.e = nil
			}
		}
		if len(w.items) == 0 {
			delete(s.weights, node)
		}
	}
	s.trimmed, s.base = true, *s.entries[k-1]
	s.base.claim, s.base.release, s.base.keys = ClaimBody{}, ReleaseBody{}, nil
	s.entries = slices.Clone(s.entries[k:])
	s.applied -= k
	cps := make([]checkpoint, 0, len(s.cps)-j+1)
	for _, c := range s.cps[j-1:] {
		c.n -= k
		cps = append(cps, c)
	}
	s.cps = cps
}

// insertedAt takes the fold back for an entry inserted at index i.
func (s *State) insertedAt(i int) {
	// Where the fold may meet the fold before: the states of that fold at
	// i or past it, one entry further on now (the same entries follow
	// them), and past where the fold stands (it has passed the others),
	// ascending.
	var ahead []checkpoint
	keep := func(c checkpoint) {
		if c.n >= i && (len(ahead) == 0 || c.n+1 > ahead[len(ahead)-1].n) {
			c.n++
			ahead = append(ahead, c)
		}
	}
	at := s.applied
	if i < at {
		byN := func(c checkpoint, n int) int { return cmp.Compare(c.n, n) }
		from, _ := slices.BinarySearchFunc(s.cps, i, byN)
		for _, c := range s.cps[from:] {
			if c.n < at {
				keep(checkpoint{n: c.n, fold: s.fold, held: c.held})
			}
		}
		keep(checkpoint{n: at, fold: s.fold, held: s.held})
		s.fold++
		k, _ := slices.BinarySearchFunc(s.cps, i+1, byN)
		s.cps = s.cps[:k] // the last one, at i or before it, is where to start again
		s.applied, s.held = 0, nil
		if k > 0 {
			s.applied, s.held = s.cps[k-1].n, slices.Clone(s.cps[k-1].held)
		}
		s.indexHeld()
	}
	for _, c := range s.ahead {
		if c.n > at {
			keep(c)
		}
	}
	// Entries dated back one after the other, with no read between them,
	// each leave a state where the fold stood: fewer places to meet are
	// as good (any state of a fold before is one).
	for len(ahead) > s.maxCps {
		ahead = thin(ahead)
	}
	s.ahead = ahead
}

func (s *State) catchUp() {
	for s.applied < len(s.entries) {
		if len(s.ahead) > 0 {
			s.refolds++
		}
		s.apply(s.entries[s.applied])
		s.applied++
		if s.hold != nil && !s.entries[s.applied-1].before(s.hold) {
			s.hold = nil
		}
		if s.meet() {
			continue
		}
		last := 0
		if len(s.cps) > 0 {
			last = s.cps[len(s.cps)-1].n
		}
		// Spread over the board folded so far: about half as many as may
		// be kept, so that thinning (a fold that met another adopts its
		// states too) leaves them at most twice as far apart.
		if s.applied-last >= max(s.every, s.applied*2/s.maxCps) {
			s.checkpoint(checkpoint{n: s.applied, fold: s.fold, held: slices.Clone(s.held)})
		}
	}
}

// meet reports whether the fold just reached a state the fold before an
// entry dated back had at the same place, and if so takes that fold's
// states and goes on from where it stood.
func (s *State) meet() bool {
	for len(s.ahead) > 0 && s.ahead[0].n < s.applied {
		s.ahead = s.ahead[1:]
	}
	if len(s.ahead) == 0 || s.ahead[0].n != s.applied {
		return false
	}
	if s.hold != nil && s.entries[s.applied-1].before(s.hold) {
		return false // an entry the fold before took in is ignored now
	}
	if !sameHeld(s.held, s.ahead[0].held) {
		s.ahead = s.ahead[1:] // passed
		return false
	}
	// That fold's states from here on are this fold's, up to where it
	// stood. (A fold's states come before those of the fold it went back
	// from, which stood further on.)
	j := 0
	for j+1 < len(s.ahead) && s.ahead[j+1].fold == s.ahead[0].fold {
		j++
	}
	for _, c := range s.ahead[:j+1] {
		s.checkpoint(c)
	}
	last := s.ahead[j]
	s.applied, s.held, s.ahead = last.n, slices.Clone(last.held), s.ahead[j+1:]
	s.indexHeld()
	return true
}

// checkpoint keeps c, thinning the checkpoints when there are too many.
func (s *State) checkpoint(c checkpoint) {
	s.cps = append(s.cps, c)
	if len(s.cps) > s.maxCps {
		if s.trimmed { // the first one is where the fold starts: it stays
			s.cps = s.cps[:1+len(thin(s.cps[1:]))]
		} else {
			s.cps = thin(s.cps)
		}
	}
}

// thin keeps every other state of cs, the last one among them.
func thin(cs []checkpoint) []checkpoint {
	keep := cs[:0]
	for j, c := range cs {
		if (len(cs)-1-j)%2 == 0 {
			keep = append(keep, c)
		}
	}
	clear(cs[len(keep):])
	return keep
}

// memberKey is the key of members for a holder (NAME@PEER_ID, or
// @PEER_ID): its node.
func memberKey(holder string) string {
	return holder[strings.LastIndexByte(holder, '@')+1:]
}

// creator returns the creator (peer ID) of a board room, or, its create
// event not taken in, a name of the room's own that no node has.
func (s *State) creator(room string) string {
	if c := s.creators[room]; c != nil {
		return memberKey(c.Holder)
	}
	return "?" + room
}

// host returns node's host before e (nil: at the end): the creator of the
// first board room the node created or joined, in fold order (its create
// or join is its own event, dated by its own clock), or "".
func (s *State) host(node string, e *Entry) string {
	for _, m := range s.members[node] {
		if e != nil && !m.before(e) {
			break
		}
		if m.Kind == KindCreated || m.Kind == KindJoined {
			return s.creator(m.Room)
		}
	}
	return ""
}

// off reports whether node's claims in room are ignored before e (nil: at
// the end). The board's rule of removals, which every node derives alike
// from the entries it has (the membership entries before e, and the
// rooms' creators): a removal of node X from a board room by its creator
// R (only a room's creator removes another node)
//
//   - ends X's claims posted in the board rooms R created, and has X's
//     claims there after it ignored until a room R created invites X
//     again;
//   - counts on the whole board when R is X's host, the creator of the
//     first board room X created or joined (R's room is where X came to
//     the board): then X's claims in every board room end, and its later
//     claims in any of them, a room of its own too, are ignored, until a
//     room R created invites X again.
//
// A node that made a board room before it joined any is its own host:
// another member can end its claims only in rooms that member made.
func (s *State) off(node, room string, e *Entry) bool {
	host := ""
	wide := false
	var by map[string]bool // creators whose rooms the node is out of
	for _, m := range s.members[node] {
		if e != nil && !m.before(e) {
			break
		}
		switch m.Kind {
		case KindCreated, KindJoined:
			if host == "" {
				host = s.creator(m.Room)
			}
		case KindRemoved:
			r := s.creator(m.Room)
			if by == nil {
				by = map[string]bool{}
			}
			by[r] = true
			wide = wide || r == host
		case KindInvited:
			r := s.creator(m.Room)
			delete(by, r)
			wide = wide && r != host
		}
	}
	return wide || by[s.creator(room)]
}

// sameHeld reports whether a and b hold the same claims in the same order
// (conflict takes the first one that overlaps).
func sameHeld(a, b []*Held) bool {
	return slices.EqualFunc(a, b, func(x, y *Held) bool { return *x == *y })
}

// indexHeld indexes held after it was replaced.
func (s *State) indexHeld() {
	s.idx.reset(s.held)
	s.minExp = math.MinInt64 // the next entry looks for expired claims
}

// drop takes the claims gone out of held and out of the index.
func (s *State) drop(gone func(h *Held) bool) {
	s.held = slices.DeleteFunc(s.held, func(h *Held) bool {
		if gone(h) {
			s.idx.remove(h)
			return true
		}
		return false
	})
}

// dropOne drops h, a claim held: as drop does, without asking of every
// claim held whether it is h (a renewal of a claim of MaxPaths paths
// drops up to MaxPaths of them, one by one).
func (s *State) dropOne(h *Held) {
	if i := slices.Index(s.held, h); i >= 0 {
		s.held = slices.Delete(s.held, i, i+1)
		s.idx.remove(h)
	}
}

func (s *State) apply(e *Entry) {
	if e.Time >= s.minExp {
		s.drop(func(h *Held) bool { return h.Expires <= e.Time })
		s.minExp = math.MaxInt64
		for _, h := range s.held {
			s.minExp = min(s.minExp, h.Expires)
		}
	}
	switch e.Kind {
	case KindInvited, KindCreated, KindJoined:
		return
	case KindRemoved:
		node, r := memberKey(e.Holder), s.creator(e.Room)
		wide := s.host(node, e) == r
		s.drop(func(h *Held) bool {
			return memberKey(h.Holder) == node && (wide || s.creator(h.Room) == r)
		})
		return
	}
	rec := Record{ID: e.ID, Room: e.Room, Holder: e.Holder, Time: e.Time, Kind: e.Kind}
	defer func() { s.records[e.ID] = rec }()
	if e.bad != "" {
		rec.Bad = e.bad
		return
	}
	if e.over {
		rec.Bad = overWeight[e.Kind]
		return
	}
	switch e.Kind {
	case KindClaim:
		c := e.claim
		rec.Paths, rec.Note, rec.Expires = slices.Clone(c.Paths), c.Note, e.Time+c.TTL.Milliseconds()
		if s.off(memberKey(e.Holder), e.Room, e) {
			rec.Bad = "its node was removed from the board or the room before it"
			return
		}
		if h := s.idx.first(e.Holder, e.keys, math.MinInt64); h != nil { // held has no expired claim here
			cp := *h
			rec.Lost = &cp
			return
		}
		for i, p := range c.Paths {
			since := e.Time
			if old := s.idx.find(e.Holder, e.keys[i]); old != nil { // renewed
				since = old.Since
				s.dropOne(old)
			}
			h := &Held{Path: p, Holder: e.Holder, Note: c.Note, Since: since,
				Expires: rec.Expires, Event: e.ID, Room: e.Room}
			h.setKey(e.keys[i])
			s.held = append(s.held, h)
			s.idx.add(h)
			s.minExp = min(s.minExp, h.Expires)
		}
	case KindRelease:
		rec.Paths = slices.Clone(e.release.Paths)
		s.drop(func(h *Held) bool {
			if h.Holder == e.Holder && names(e.keys, h) {
				rec.Ended = append(rec.Ended, h.Path)
				return true
			}
			return false
		})
	}
}

// names reports whether a release of the paths of keys (their key forms)
// ends h (none: every claim of its holder): one of them is h's path
// compared as overlaps are (key), as a claim again of it in another case
// renews it.
func names(keys []string, h *Held) bool {
	return len(keys) == 0 || slices.Contains(keys, h.key)
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
	if h := s.idx.first(holder, pathKeys(paths), now.UnixMilli()); h != nil {
		cp := *h
		return &cp
	}
	return nil
}

// History returns the board's events in fold order; with path set only
// those with a path overlapping it: a release of everything counts when it
// ended a claim overlapping it (not another agent's, who held nothing
// there); see historyMatch.
func (s *State) History(path string) []Record {
	s.catchUp()
	match := historyMatch(path)
	out := []Record{}
	for _, e := range s.entries {
		if member(e.Kind) {
			continue
		}
		r := s.records[e.ID]
		named := r.Paths
		if r.Kind == KindRelease && len(r.Paths) == 0 {
			named = r.Ended
		}
		if path != "" && !slices.ContainsFunc(named, match) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// historyMatch is whether a path named by an event is one a history read
// for path lists: one that overlaps it (Overlap). A path with no glob is
// read as a folder in full: claims with anything under it count too,
// also through a star (.worktrees/w4 finds the claims on
// .worktrees/w4/** and on **/*.go), which Overlap leaves out so as not
// to refuse a claim on a file.
func historyMatch(path string) func(p string) bool {
	under := ""
	if dir, ok := folder(path); ok {
		under = dir + "/**"
	}
	return func(p string) bool { return Overlap(p, path) || under != "" && Overlap(p, under) }
}

// Record returns what came of one event.
func (s *State) Record(id string) (Record, bool) {
	s.catchUp()
	r, ok := s.records[id]
	return r, ok
}

// Removed reports whether the node peer's claims in room are ignored now:
// it was removed from the whole board, or from the rooms of room's
// creator, and not invited back since (see off).
func (s *State) Removed(peer, room string) bool {
	return s.off(memberKey(peer), room, nil)
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

// Beaten returns the claims of other agents that lost to one of holder's,
// in fold order: claims made where holder's was not yet known (on the
// other side of a partition, or at nearly the same time on another node),
// whose agents may have changed the paths meanwhile.
func (s *State) Beaten(holder string) []Record {
	s.catchUp()
	var out []Record
	for _, e := range s.entries {
		if r := s.records[e.ID]; r.Lost != nil && r.Lost.Holder == holder {
			out = append(out, r)
		}
	}
	return out
}
