package rooms

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Limits of a room's name and purpose.
const (
	// MaxName is the longest room name, in bytes.
	MaxName = 200
	// MaxPurpose is the longest room purpose, in bytes.
	MaxPurpose = 300
)

// createBody is the body of a create event: the nonce, the name, and the
// purpose after a NUL byte when there is one.
func createBody(nonce []byte, name, purpose string) []byte {
	b := append(append([]byte(nil), nonce...), name...)
	if purpose != "" {
		b = append(append(b, 0), purpose...)
	}
	return b
}

// splitCreate returns the name and purpose of a create event's body after
// its nonce, as they are shown and kept in a room's record: clean
// (cleanLine). A create event is the root of its room's history, so every
// node takes it as signed, whatever its name and purpose (a node of
// another build, or a room made under earlier rules, may send any bytes):
// refusing it would leave the room without a root on this node alone.
func splitCreate(b []byte) (name, purpose string) {
	n, p, _ := bytes.Cut(b, []byte{0})
	return cleanLine(string(n), MaxName), cleanLine(string(p), MaxPurpose)
}

// cleanLine returns s (a room's name or purpose, at most max bytes) as
// CheckName and CheckPurpose let one be: bytes that are not UTF-8, control
// characters and line and paragraph separators become spaces, format
// characters (bidi overrides and marks, zero-width characters, tags: what
// a reader does not see) are dropped, and a text over max bytes is cut,
// marked with "…". A name or purpose that passes the checks comes back as
// it is.
func cleanLine(s string, max int) string {
	if checkLine("", s, max, notInLine) == nil {
		return s
	}
	s = strings.Map(func(r rune) rune {
		switch {
		case unicode.Is(unicode.Cf, r):
			return -1
		case notInLine(r):
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, " "))
	if len(s) > max {
		cut := max - len("…")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// notInLine reports the characters a room's name or purpose may not hold,
// as a card's texts may not (discovery): control characters (line breaks
// among them), format characters (bidi overrides and marks, zero-width
// characters, tags), and the line and paragraph separators. A terminal
// would run the first; the others reorder or hide what a line shows, or
// start a line of their own for a model or an editor.
func notInLine(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// CheckName checks a room name: 1 to MaxName bytes of text on one line,
// without control or format characters.
func CheckName(name string) error { return checkName(name, notInLine) }

// checkName checks a room name, refusing the characters bad reports.
func checkName(name string, bad func(rune) bool) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%w: a room needs a name", ErrMalformed)
	}
	return checkLine("room name", name, MaxName, bad)
}

// CheckPurpose checks a room purpose: at most MaxPurpose bytes of text on
// one line, without control or format characters (empty is allowed).
func CheckPurpose(purpose string) error {
	return checkLine("room purpose", purpose, MaxPurpose, notInLine)
}

func checkLine(what, s string, max int, bad func(rune) bool) error {
	if len(s) > max || !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s must be valid text of at most %d bytes", ErrMalformed, what, max)
	}
	if i := strings.IndexFunc(s, bad); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("%w: %s must be one line without control or format characters (found %U)", ErrMalformed, what, r)
	}
	return nil
}

// LeaveTarget returns the node a leave event takes out of the room and the
// seq after which that node's events are refused (for a node leaving by
// itself, the leave event's own seq). ok is false for an agent's leave (an
// empty body). The body of a node's leave is cutoff:8BE then the peer ID.
func (e *Event) LeaveTarget() (p peer.ID, cutoff uint64, err error) {
	if e.Kind != KindLeave {
		return "", 0, fmt.Errorf("%w: kind %q is not leave", ErrMalformed, e.Kind)
	}
	if len(e.Body) == 0 {
		return "", 0, nil
	}
	if len(e.Body) <= 8 {
		return "", 0, fmt.Errorf("%w: leave body of %d bytes", ErrMalformed, len(e.Body))
	}
	p, err = peer.IDFromBytes(e.Body[8:])
	if err != nil {
		return "", 0, fmt.Errorf("%w: leave target: %v", ErrMalformed, err)
	}
	cutoff = binary.BigEndian.Uint64(e.Body[:8])
	if p == e.Author {
		cutoff = e.Seq
	}
	return p, cutoff, nil
}

func leaveBody(cutoff uint64, p peer.ID) []byte {
	return append(binary.BigEndian.AppendUint64(nil, cutoff), p...)
}

// AgentMember is an agent's membership of a room, as the latest event (in
// display order) about it says: it is in after create, join, a message or
// an ask of its own, or an invite naming it; out after it left or its node
// left or was removed. A removal by the room's creator (RemoveAgent) holds
// it out until an invite naming it comes later in display order: its own
// events made across the removal do not bring it back.
type AgentMember struct {
	Addr  string // NAME@PEER_ID
	In    bool
	Event ID     // the latest event about it
	Depth uint64 // that event's depth
	// Arrival is the place in this node's arrival log of the event that
	// began its current membership (or, when out, that took it out).
	Arrival uint64
	// Removal is the latest removal of the agent by the room's creator
	// (zero if none), RemovalDepth its depth.
	Removal      ID
	RemovalDepth uint64

	last        bool   // what Event says (In, but for a removal)
	invite      ID     // the latest invite naming the agent (zero if none)
	inviteDepth uint64 // its depth
}

// Removed reports whether the room's creator took the agent out and no
// invite named it since (in display order): then it is out, whatever its
// own events say.
func (m AgentMember) Removed() bool {
	return m.Removal != (ID{}) && !Less(m.RemovalDepth, m.Removal, m.inviteDepth, m.invite)
}

// agentChange is what an event does to an agent record beside being the
// latest event about it.
type agentChange int

const (
	agentEvent   agentChange = iota // its own event, its leave, its node's leave
	agentInvite                     // an invite naming it
	agentRemoval                    // its removal by the room's creator
)

func agentAddr(name identity.AgentName, p peer.ID) string { return string(name) + "@" + peerString(p) }

// outRec is what a room keeps of a node that left or was removed.
type outRec struct {
	cutoff uint64 // its events up to this seq belong to its last membership
	admit  ID     // the event that began that membership
	first  uint64 // the first seq of that membership
	back   bool   // invited again since: its events from cutoff+1 need the new invite in their past
	depth  uint64 // the depth of the event that took it out (0 in records older than this field)
	leaves []ID   // the leaves that took it out, since it was last a member (none in records older than this field)
}

// maxOutLeaves bounds outRec.leaves: an honest node is taken out by at most
// two leaves at once (its own and the creator's removal).
const maxOutLeaves = 8

// removedDepth returns, for node p out of the room and not invited back,
// the depth of the event that took it out; zero when unknown.
func (r *room) removedDepth(p peer.ID) uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if o, ok := r.outs[p]; ok && !o.back {
		return o.depth
	}
	return 0
}

// outLeaves returns the leaves that took node p out of the room, if it is
// out and not invited back.
func (r *room) outLeaves(p peer.ID) []ID {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if o, ok := r.outs[p]; ok && !o.back {
		return slices.Clone(o.leaves)
	}
	return nil
}

func (o outRec) marshal() []byte {
	b := binary.BigEndian.AppendUint64(nil, o.cutoff)
	b = append(b, o.admit[:]...)
	b = binary.BigEndian.AppendUint64(b, o.first)
	back := byte(0)
	if o.back {
		back = 1
	}
	b = binary.BigEndian.AppendUint64(append(b, back), o.depth)
	for _, l := range o.leaves {
		b = append(b, l[:]...)
	}
	return b
}

// agentRecLen is an agent record's length; agentRecLongLen with what a
// removal needs (written once an invite names the agent or it is removed).
const (
	agentRecLen     = 8 + 32 + 1 + 8
	agentRecLongLen = agentRecLen + 1 + 8 + 32 + 8 + 32
)

func (m AgentMember) marshal() []byte {
	b := binary.BigEndian.AppendUint64(nil, m.Depth)
	b = append(b, m.Event[:]...)
	b = append(b, flag(m.In))
	b = binary.BigEndian.AppendUint64(b, m.Arrival)
	if m.Removal == (ID{}) && m.invite == (ID{}) {
		return b
	}
	b = append(b, flag(m.last))
	b = append(binary.BigEndian.AppendUint64(b, m.RemovalDepth), m.Removal[:]...)
	return append(binary.BigEndian.AppendUint64(b, m.inviteDepth), m.invite[:]...)
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// parseAgentRec reads an agent record (marshal).
func parseAgentRec(addr string, v []byte) (AgentMember, bool) {
	if len(v) != agentRecLen && len(v) != agentRecLongLen {
		return AgentMember{}, false
	}
	a := AgentMember{Addr: addr, Depth: be8(v[:8]), In: v[40] == 1, Arrival: be8(v[41:49])}
	copy(a.Event[:], v[8:40])
	a.last = a.In
	if len(v) == agentRecLongLen {
		a.last = v[49] == 1
		a.RemovalDepth = be8(v[50:58])
		copy(a.Removal[:], v[58:90])
		a.inviteDepth = be8(v[90:98])
		copy(a.invite[:], v[98:130])
	}
	return a, true
}

// loadMembership reads the agent records and the nodes that left. The
// caller (load) holds no lock; the room's goroutine is not running yet.
func (r *room) loadMembership() error {
	db, rid := r.m.cfg.Store, string(r.id)
	agents := make(map[string]AgentMember)
	outs := make(map[peer.ID]outRec)
	var bad error
	ap := schema.RoomAgentPrefix(rid)
	err := db.ScanFrom(ap, nil, false, func(k, v []byte) bool {
		a, ok := parseAgentRec(string(k[len(ap):]), v)
		if !ok {
			bad = fmt.Errorf("rooms: bad agent record in %s", rid)
			return false
		}
		agents[a.Addr] = a
		return true
	})
	if err == nil && bad == nil {
		op := schema.RoomOutPrefix(rid)
		err = db.ScanFrom(op, nil, false, func(k, v []byte) bool {
			p, _, ok := peerFromKey(k[len(op):])
			if !ok || (len(v) != 8+32+8+1 && (len(v) < 8+32+8+1+8 || (len(v)-57)%32 != 0)) {
				bad = fmt.Errorf("rooms: bad left-node record in %s", rid)
				return false
			}
			o := outRec{cutoff: be8(v[:8]), first: be8(v[40:48]), back: v[48] == 1}
			if len(v) > 49 {
				o.depth = be8(v[49:57])
			}
			for rest := v[min(len(v), 57):]; len(rest) >= 32; rest = rest[32:] {
				o.leaves = append(o.leaves, ID(rest[:32]))
			}
			copy(o.admit[:], v[8:40])
			outs[p] = o
			return true
		})
	}
	if err == nil {
		err = bad
	}
	if err != nil {
		return fmt.Errorf("rooms: load %s: %w", rid, err)
	}
	r.mu.Lock()
	r.agents, r.outs = agents, outs
	r.mu.Unlock()
	return nil
}

// checkAuthor checks that e's author may post it: a member node; the first
// event of a membership must have the admitting event in its past. Only the
// creator removes another node. admit and member are the author's entry in
// members. Its caller holds procMu.
//
// A node that left, or was removed, posts nothing more until it is invited
// again. Its events up to the leave's cutoff are all in the leave's causal
// past (the cutoff is the leave's own seq, or the remover's count of the
// node's events), so the room stored them before it applied the leave: one
// that comes now with such a seq is a fork made afterwards, perhaps an
// invite of itself that would take the node back in, and it is refused.
//
// Except one a member built on (builtOnByMember): a removal can cross the
// node's posts, and a node that had a post before the removal stored it
// and its members built on it, while a node that had the removal first
// refuses the post. Refused for good, it would keep every later event of
// those members out of that node: the room split in two. An event a
// member's event waits for was taken by that member's node while its
// author was in, so it is taken here too, whatever came first.
func (r *room) checkAuthor(id ID, e *Event, admit ID, member bool) error {
	err := r.checkMember(e, admit, member)
	if errors.Is(err, ErrNotMember) && r.takesFromOut(Item{ID: id, Event: e}) {
		r.m.metrics.builtOn.Inc()
		err = nil
	}
	if err != nil {
		return err
	}
	// Whoever builds on it, a leave takes out only whom its author may.
	return r.checkLeave(e)
}

// takesFromOut reports whether it, an event of a node that left or was
// removed, is taken all the same: a member (or this node) built on it, or
// it is the node's own leave, the first of its own since it was taken out
// (a leave that crossed the removal: a node that had it first holds the
// node out after it, and an invite back must name it everywhere). Its
// caller holds procMu.
func (r *room) takesFromOut(it Item) bool {
	e := it.Event
	if !r.wasOut(e.Author) {
		return false
	}
	return r.builtOnByMember(it.ID) || r.ownCrossingLeave(e)
}

// ownCrossingLeave reports whether e is its out author's own leave, at the
// author's next seq, and the out record holds no leave of the author's own
// yet. Its caller holds procMu.
func (r *room) ownCrossingLeave(e *Event) bool {
	if e.Kind != KindLeave {
		return false
	}
	if t, _, err := e.LeaveTarget(); err != nil || t != e.Author {
		return false
	}
	r.mu.RLock()
	o := r.outs[e.Author]
	next := r.vv[e.Author] + 1
	leaves := slices.Clone(o.leaves)
	r.mu.RUnlock()
	if e.Seq != next || len(leaves) == 0 {
		return false // not next; or a record older than the field
	}
	for _, l := range leaves {
		if ev := r.walkedEvent(l); ev == nil || ev.Author == e.Author {
			return false
		}
	}
	return true
}

// wasOut reports whether node p left the room or was removed (and may be
// back since).
func (r *room) wasOut(p peer.ID) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.outs[p]
	return ok
}

// builtOnByMember reports whether an event of a member node (or of this
// node) waits in the pending pool for id, directly or through other
// pooled events.
func (r *room) builtOnByMember(id ID) bool {
	return r.pending.NeededBy(id, func(e *Event) bool { return e != nil && r.isMemberOrSelf(e.Author) })
}

// A room keeps the last events it refused as their author's, out of the
// room or cut off by this node's user, up to outRefusedKept of them and
// outRefusedBytes of wire: a sync sends parents first, so an event a
// member built on comes, and is refused, just before the event that shows
// a member built on it.
const (
	outRefusedKept  = 64
	outRefusedBytes = 256 << 10
)

// keepOutRefused keeps it, just refused with err, if its author is out of
// the room or cut off (the oldest kept go first). Its caller holds procMu.
func (r *room) keepOutRefused(it Item, err error) {
	a := it.Event.Author
	out := (errors.Is(err, ErrNotMember) || errors.Is(err, ErrStranger)) && r.wasOut(a)
	cutOff := errors.Is(err, ErrNoConsent) && r.isMember(a) // not a stranger that never was one
	if !out && !cutOff {
		return
	}
	if slices.ContainsFunc(r.outRefused, func(k Item) bool { return k.ID == it.ID }) {
		return
	}
	r.outRefused = append(r.outRefused, it)
	r.outRefusedLen += len(it.Wire)
	for len(r.outRefused) > outRefusedKept || r.outRefusedLen > outRefusedBytes {
		r.outRefusedLen -= len(r.outRefused[0].Wire)
		r.outRefused = slices.Delete(r.outRefused, 0, 1)
	}
}

// retryBuiltOn vouches for the pooled events that it, just pooled and
// waiting for missing, waits for (directly or through pooled events; its
// caller calls it when it vouches for them, vouchesParents), as they may
// have come before it, and offers again the kept refused events among
// them: a sync sends parents first, so they were refused before it came
// to show a member built on them. Its caller holds procMu.
func (r *room) retryBuiltOn(tx *txn, it Item, missing []ID, from peer.ID) {
	seen := make(map[ID]bool)
	queue := slices.Clone(missing)
	for len(queue) > 0 && len(seen) < retryWalk {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		if kept, ok := r.takeOutRefused(id); ok {
			r.receive(tx, kept, from)
			continue
		}
		if e := r.pending.Event(id); e != nil {
			r.raiseVouched(e.Author, e.Seq)
			queue = append(queue, r.pending.WaitsFor(id)...)
		}
	}
}

// retryWalk bounds how many pooled events retryBuiltOn looks through.
const retryWalk = 256

// isMemberOrSelf reports whether p is a member node or this node.
func (r *room) isMemberOrSelf(p peer.ID) bool {
	if p == r.m.self {
		return true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.members[p]
	return ok
}

// takeOutRefused returns, and forgets, the kept refused event id. Its
// caller holds procMu.
func (r *room) takeOutRefused(id ID) (Item, bool) {
	for k, it := range r.outRefused {
		if it.ID == id {
			r.outRefusedLen -= len(it.Wire)
			r.outRefused = slices.Delete(r.outRefused, k, k+1)
			return it, true
		}
	}
	return Item{}, false
}

// checkMember is checkAuthor's rule without its exception (and without
// checkLeave).
func (r *room) checkMember(e *Event, admit ID, member bool) error {
	r.mu.RLock()
	o, wasOut := r.outs[e.Author]
	r.mu.RUnlock()
	first := uint64(1)
	switch {
	case wasOut && e.Seq <= o.cutoff:
		return fmt.Errorf("%w: %s left room %s (or was removed) after its event %d, and this is a fork of event %d",
			ErrNotMember, e.Author, r.id, o.cutoff, e.Seq)
	case wasOut && !o.back:
		return fmt.Errorf("%w: %s left room %s (or was removed) after its event %d", ErrNotMember, e.Author, r.id, o.cutoff)
	case wasOut:
		first = o.cutoff + 1
	case !member:
		return fmt.Errorf("%w: %s in room %s", ErrNotMember, e.Author, r.id)
	}
	if e.Seq == first {
		if err := r.checkFirst(e, admit, wasOut); err != nil {
			return err
		}
	}
	return nil
}

// checkLeave checks that a leave takes out only whom its author may: itself
// or its own agent, or, for the room's creator, another node or another
// node's agent. Its caller holds procMu.
func (r *room) checkLeave(e *Event) error {
	if e.Kind != KindLeave {
		return nil
	}
	r.mu.RLock()
	creator := r.meta.Creator
	r.mu.RUnlock()
	p, _, err := e.LeaveTarget()
	if err != nil {
		return err
	}
	if p != "" && p != e.Author && e.Author != creator {
		return fmt.Errorf("%w: %s removes %s from room %s", ErrNotCreator, e.Author, p, r.id)
	}
	named, err := r.leaveNamed(e)
	if err != nil {
		return err
	}
	if named != "" && !strings.HasSuffix(named, "@"+peerString(e.Author)) && e.Author != creator {
		return fmt.Errorf("%w: %s removes agent %s from room %s", ErrNotCreator, e.Author, named, r.id)
	}
	return nil
}

// firstOf returns the event that admitted member p and the seq of its first
// event in that membership (1, or one past the cutoff of the membership
// before). Its caller holds procMu.
func (r *room) firstOf(p peer.ID) (admit ID, first uint64) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	admit, first = r.members[p], 1
	if o, ok := r.outs[p]; ok && o.back {
		first = o.cutoff + 1
	}
	return admit, first
}

// checkFirst checks that e, the first event of its author's membership, has
// the invite that admitted it (admit) in its causal past. An own first event
// names it among its parents, which is taken at once. Otherwise, in a room
// created before NamedAdmitSince, admit is looked for as far as
// maxAncestorWalk events back, as it always was. In a room created since,
// the walk goes through at most shortAncestorWalk events (a node of an older
// build posts its join as its invite arrives, a few events after it), so a
// fork of a first seq costs no walk of the room's history; and any invite
// of the author will do (for one taken out before, any return: an invite
// that names a leave of it, invitesIn): two members may invite a node at
// once, and nodes keep whichever they stored first as its admission,
// while the invites in e's past are the same on every node. Its
// caller holds procMu.
func (r *room) checkFirst(e *Event, admit ID, wasOut bool) error {
	if slices.Contains(e.Parents, admit) {
		return nil
	}
	strict, err := r.namesAdmit()
	if err != nil {
		return err
	}
	var ok bool
	switch {
	case !strict:
		ok = r.hasAncestor(e, admit, maxAncestorWalk)
	case wasOut:
		r.mu.RLock()
		leaves := slices.Clone(r.outs[e.Author].leaves)
		r.mu.RUnlock()
		ok = r.invitedWithin(e, shortAncestorWalk, func(ev *Event) bool { return r.namesLeaves(ev, e.Author, leaves) })
	default:
		ok = r.invitedWithin(e, shortAncestorWalk, nil)
	}
	if !ok {
		return fmt.Errorf("%w: %s speaks without its invite in the event's past (or further back than is looked)", ErrNotMember, e.Author)
	}
	return nil
}

// NamedAdmitSince is when the rule that a membership's first event has its
// invite near (checkFirst) began: unix ms, 2026-12-03 UTC. Every node reads
// the date from the same create event.
const NamedAdmitSince int64 = 1_796_256_000_000

// AgentRemovalSince is when the rule that a leave naming an agent (its To)
// takes that agent out began (RemoveAgent): unix ms, 2026-12-04 UTC. In a
// room created before, such a leave is its author's agent leaving, as it
// always was.
const AgentRemovalSince int64 = 1_796_342_400_000

// namesAdmit reports whether the room follows NamedAdmitSince's rule; an
// error when its create event cannot be read, so that no node picks a
// rule the others do not. Its caller holds procMu.
func (r *room) namesAdmit() (bool, error) {
	at, err := r.foundedAt()
	return at >= NamedAdmitSince, err
}

// leaveNamed returns the agent a leave names and takes out, NAME@PEER_ID
// (its To, in a room created since AgentRemovalSince); "" when the leave
// is of its author's agent or of a node. Its caller holds procMu.
func (r *room) leaveNamed(e *Event) (string, error) {
	if e.Kind != KindLeave || e.To == "" || len(e.Body) != 0 {
		return "", nil
	}
	at, err := r.foundedAt()
	if err != nil || at < AgentRemovalSince {
		return "", err
	}
	a, err := identity.ParseAgentAddr(e.To)
	if err != nil || a.Peer == "" {
		return "", fmt.Errorf("%w: a leave names %q, not an agent address NAME@PEER_ID", ErrMalformed, e.To)
	}
	return a.String(), nil
}

// foundedAt returns the time of the room's create event (its author's
// clock), which dates the rules the room follows. Its caller holds procMu.
func (r *room) foundedAt() (int64, error) {
	if !r.foundedKnown {
		r.mu.RLock()
		creator := r.meta.Creator
		r.mu.RUnlock()
		if creator == "" {
			return 0, fmt.Errorf("rooms: room %s has no create event to date it", r.id)
		}
		idb, ok, err := r.m.cfg.Store.Lookup(schema.RoomAuthorSeq(string(r.id), []byte(creator), 1))
		if err == nil && (!ok || len(idb) != len(ID{})) {
			err = fmt.Errorf("rooms: room %s: its create event is not indexed", r.id)
		}
		if err != nil {
			return 0, err
		}
		e, _, err := r.m.readEvent(r.id, ID(idb))
		if err != nil {
			return 0, err
		}
		r.founded, r.foundedKnown = e.Time, true
	}
	return r.founded, nil
}

// invitesIn reports whether invite e makes node p a member: always, unless
// p is its author, or is out of the room and not invited back since. Then,
// in a room created since NamedAdmitSince, only an invite that names every
// leave that took p out among its parents does (a return; this node's own
// invites of a node that is out name them). An invite made before its
// author knew of a leave is so taken as it was meant, a no-op, on every
// node, and a leave wins over a return that crossed it: before, a node
// that stored the leave first took the invite as a return, and one that
// stored the invite first took nothing from it, and the two then disagreed
// on the node's later events. Its caller holds procMu.
func (r *room) invitesIn(e *Event, p peer.ID) bool {
	if p == e.Author {
		// An invite of itself: honest nodes make none (an invite needs
		// a member, and a member is in), and one a node out of the
		// room signed, which a member built on, must not take it back.
		return false
	}
	r.mu.RLock()
	o, out := r.outs[p]
	_, member := r.members[p]
	r.mu.RUnlock()
	if !out || o.back || member {
		return true
	}
	strict, err := r.namesAdmit()
	if err != nil {
		r.m.log.Warn("room's rules unknown; an invite of a node that is out takes it back in", "room", string(r.id), "err", err)
		return true
	}
	if !strict {
		return true
	}
	return r.namesLeaves(e, p, o.leaves)
}

// namesLeaves reports whether e names every one of leaves (those of node
// p's out record) among its parents; with none (a record older than the
// field), whether it names any leave of p. Its caller holds procMu.
func (r *room) namesLeaves(e *Event, p peer.ID, leaves []ID) bool {
	if len(leaves) == 0 {
		return r.namesLeaveOf(e, p)
	}
	for _, l := range leaves {
		if !slices.Contains(e.Parents, l) {
			return false
		}
	}
	return true
}

// isLeaveOf reports whether event id (stored, or in the batch) is a leave
// that takes node p out. Its caller holds procMu, not r.mu.
func (r *room) isLeaveOf(id ID, p peer.ID) bool {
	ev := r.walkedEvent(id)
	if ev == nil || ev.Kind != KindLeave {
		return false
	}
	t, _, err := ev.LeaveTarget()
	return err == nil && t == p
}

// namesLeaveOf reports whether one of e's parents is a leave that takes
// node p out. Its caller holds procMu.
func (r *room) namesLeaveOf(e *Event, p peer.ID) bool {
	for _, id := range e.Parents {
		if r.isLeaveOf(id, p) {
			return true
		}
	}
	return false
}

// withLeaveLocked returns o's leaves with id added, sorted, the deepest
// maxOutLeaves kept. (A record older than the field holds none: it goes on
// with id alone.) Its caller holds procMu and r.mu.
func (r *room) withLeaveLocked(o outRec, id ID) []ID {
	leaves := slices.Clone(o.leaves)
	if !slices.Contains(leaves, id) {
		leaves = append(leaves, id)
	}
	if len(leaves) > maxOutLeaves {
		depth := func(l ID) uint64 { d, _ := r.depthOf(l); return d }
		slices.SortFunc(leaves, func(a, b ID) int {
			if Less(depth(a), a, depth(b), b) {
				return 1
			}
			return -1
		})
		leaves = leaves[:maxOutLeaves]
	}
	return SortIDs(leaves)
}

// oldLeaves returns, for an out record of p older than its leaves field,
// the events that took p's agents out that are leaves of p. Its caller
// holds procMu, not r.mu (a damaged event read takes it).
func (r *room) oldLeaves(p peer.ID) []ID {
	suffix := "@" + p.String()
	var cands []ID
	r.mu.RLock()
	for addr, a := range r.agents {
		if !a.In && strings.HasSuffix(addr, suffix) && !slices.Contains(cands, a.Event) {
			cands = append(cands, a.Event)
		}
	}
	r.mu.RUnlock()
	var out []ID
	for _, id := range cands {
		if r.isLeaveOf(id, p) {
			out = append(out, id)
		}
	}
	return SortIDs(out)
}

// leavesOf returns, for a node p that is out and not invited back since
// (out), the leaves that took it out; none if unknown. A record older than
// that field does not hold them: then they are the event that took one of
// p's agents out, if that is a leave of p. Its caller holds procMu.
func (r *room) leavesOf(p peer.ID) (leaves []ID, out bool) {
	r.mu.RLock()
	o, out := r.outs[p]
	r.mu.RUnlock()
	switch {
	case !out || o.back:
		return nil, false
	case len(o.leaves) > 0:
		return slices.Clone(o.leaves), true
	}
	return r.oldLeaves(p), true
}

// applyMembership updates members, the nodes that left and the agent
// records for a stored event; an invite admits its node only if admits
// (invitesIn). It runs inside store (procMu held),
// with r.mu held.
func (r *room) applyMembership(tx *txn, e *Event, id ID, target peer.ID, admits bool, named string) {
	switch e.Kind {
	case KindCreate:
		r.admitLocked(tx, e, e.Author, id)
	case KindInvite:
		if admits {
			r.admitLocked(tx, e, target, id)
		}
	case KindLeave:
		if p, cutoff, err := e.LeaveTarget(); err == nil && p != "" {
			r.outLocked(tx, e, id, p, cutoff)
			return
		}
	}
	addr, in, how := "", true, agentEvent
	switch e.Kind {
	case KindCreate, KindJoin, KindMessage, KindAsk, KindClaim, KindRelease:
		addr = agentAddr(e.Agent, e.Author)
	case KindInvite:
		if e.To == "" {
			return
		}
		a, err := identity.ParseAgentAddr(e.To)
		if err != nil {
			return
		}
		if a.Peer == "" {
			a.Peer = target
		}
		addr = a.String()
		if a.Peer != e.Author {
			// Only another node's invite takes back a removal: the
			// agent's own node cannot undo it.
			how = agentInvite
		}
	case KindLeave:
		addr, in = agentAddr(e.Agent, e.Author), false
		if named != "" {
			addr = named
			if !strings.HasSuffix(named, "@"+peerString(e.Author)) {
				how = agentRemoval
			}
		}
	}
	r.setAgentLocked(tx, addr, e.Depth, id, in, how)
}

// newAgentLocked returns the record of an agent no event named before: the
// leaves of its node (outLocked takes out the agents that have a record) are
// folded in, as if it had one then, so that the record is the same whether
// the node's leave came before or after the first event naming the agent.
// Callers hold procMu and r.mu.
func (r *room) newAgentLocked(addr string) AgentMember {
	a := AgentMember{Addr: addr}
	ad, err := identity.ParseAgentAddr(addr)
	if err != nil || ad.Peer == "" {
		return a
	}
	for _, l := range r.outs[ad.Peer].leaves {
		if d, ok := r.depthOf(l); ok && Less(a.Depth, a.Event, d, l) {
			a.Depth, a.Event, a.last = d, l, false
		}
	}
	return a
}

// setAgentLocked takes an event about agent addr into its record: the
// latest event in display order says whether it is in, unless a removal
// by the room's creator is later than every invite naming it. Each part is
// the latest of a set of events, so every node that holds the same events
// holds the same record, whatever order they came in.
func (r *room) setAgentLocked(tx *txn, addr string, depth uint64, id ID, in bool, how agentChange) {
	cur, ok := r.agents[addr]
	next, changed := cur, false
	if !ok {
		next = r.newAgentLocked(addr)
	}
	if !Less(depth, id, next.Depth, next.Event) {
		next.Depth, next.Event, next.last, changed = depth, id, in, true
	}
	changed = changed || !ok
	switch {
	case how == agentInvite && Less(next.inviteDepth, next.invite, depth, id):
		next.inviteDepth, next.invite, changed = depth, id, true
	case how == agentRemoval && Less(next.RemovalDepth, next.Removal, depth, id):
		next.RemovalDepth, next.Removal, changed = depth, id, true
	}
	if !changed {
		return // an older event than those that decide it
	}
	next.In = next.last && !next.Removed()
	next.Arrival = r.arrivals
	if ok && cur.In && next.In {
		next.Arrival = cur.Arrival // still in: its membership began there
	}
	r.agents[addr] = next
	tx.ops = append(tx.ops, schema.Op{Key: schema.RoomAgent(string(r.id), addr), Val: next.marshal()})
}

// admitLocked makes p a member node, or a member again after it left.
func (r *room) admitLocked(tx *txn, e *Event, p peer.ID, id ID) {
	if _, ok := r.members[p]; ok {
		return
	}
	rid := string(r.id)
	r.members[p] = id
	r.noteAdmitter(id, e.Author)
	if r.pending.HoldsStranger(p) {
		tx.admits = append(tx.admits, p)
	}
	tx.ops = append(tx.ops, schema.Op{Key: schema.RoomMember(rid, []byte(p)), Val: id[:]})
	o, wasOut := r.outs[p]
	if wasOut {
		o.back = true
		r.outs[p] = o
		tx.ops = append(tx.ops, schema.Op{Key: schema.RoomOut(rid, []byte(p)), Val: o.marshal()})
	}
	if p != r.m.self || e.Author == r.m.self {
		return
	}
	if r.vv[p] != 0 && !wasOut {
		return
	}
	// This node is in (again): it posts its join, as the agent the invite
	// names if it names one of this node's agents.
	tx.joinAs = identity.HumanAgent
	if a, err := identity.ParseAgentAddr(e.To); err == nil && (a.Peer == "" || a.Peer == r.m.self) {
		tx.joinAs = a.Name
	}
	if r.learningOwnLocked() {
		// The room is learning this node's own events (a member told it
		// back after a restore, or it was opened from an older copy):
		// the join may be among them, and a join now could take the seq
		// of one (a fork). It is posted once they are learnt, if this
		// node has still not spoken since this admission (own.go).
		r.joinAfterOwn, tx.joinAs = tx.joinAs, ""
	}
}

// admitPooled makes the pooled events of the nodes the batch admitted, if
// they came while their author was a stranger, count as a member's, once
// the policy allows the author (an invite by a node this user cut off
// vouches for nobody). A batch whose write failed in part admitted only
// the nodes of the part written (tx.cut).
func (r *room) admitPooled(tx *txn) {
	for _, p := range tx.admits {
		if r.pending.HoldsStranger(p) && r.m.cfg.Policy.Allowed(p) == nil {
			r.pending.Admit(p)
		}
	}
}

// outLocked takes node p out of the room: its events after cutoff are
// refused, and every agent of it is out.
func (r *room) outLocked(tx *txn, e *Event, id ID, p peer.ID, cutoff uint64) {
	rid := string(r.id)
	admit, member := r.members[p]
	if o, ok := r.outs[p]; ok && !member && !o.back {
		// Out already: two leaves crossed (its own and the creator's
		// removal, say). The later cutoff counts, whichever came first:
		// its events up to it are in this leave's past, so stored. The
		// deeper leave's depth bounds how far a removed node is served,
		// and an invite back must name both leaves.
		leaves := r.withLeaveLocked(o, id)
		if cutoff > o.cutoff || e.Depth > o.depth || !slices.Equal(leaves, o.leaves) {
			o.cutoff, o.depth, o.leaves = max(o.cutoff, cutoff), max(o.depth, e.Depth), leaves
			r.outs[p] = o
			tx.ops = append(tx.ops, schema.Op{Key: schema.RoomOut(rid, []byte(p)), Val: o.marshal()})
		}
	}
	if member {
		o := outRec{cutoff: cutoff, admit: admit, first: 1, depth: e.Depth, leaves: []ID{id}}
		if prev, ok := r.outs[p]; ok && prev.back {
			// Back after an earlier leave: this leave may have crossed
			// the return (a node that had it first took the invite for
			// no return, and holds p out with both leaves), so the
			// record goes on from the one before: the later cutoff, and
			// every leave, for an invite back to name.
			o.first = prev.cutoff + 1
			o.cutoff, o.depth = max(prev.cutoff, cutoff), max(prev.depth, e.Depth)
			o.leaves = r.withLeaveLocked(prev, id)
		}
		delete(r.members, p)
		tx.ops = append(tx.ops, schema.Op{Key: schema.RoomMember(rid, []byte(p)), Delete: true})
		r.outs[p] = o
		tx.ops = append(tx.ops, schema.Op{Key: schema.RoomOut(rid, []byte(p)), Val: o.marshal()})
		switch {
		case p == r.m.self && e.Author == r.m.self:
			tx.selfLeft = true
			tx.selfProv = tx.selfProv || r.prov != nil
		case p == r.m.self:
			tx.selfOut = true
			tx.selfProv = tx.selfProv || r.prov != nil
		default:
			tx.pruned = true
		}
	}
	suffix := "@" + p.String()
	for addr := range r.agents {
		if strings.HasSuffix(addr, suffix) {
			r.setAgentLocked(tx, addr, e.Depth, id, false, agentEvent)
		}
	}
}

// afterMembership acts on membership changes once a batch is written: a
// node that left (or was removed) is dropped from the topic's mesh, and
// this node stops following a room it is out of.
func (r *room) afterMembership(tx *txn) {
	if (tx.selfLeft || tx.selfOut) && (tx.selfProv || r.provisional()) {
		// A room told back learns this node's membership from its
		// catch-ups, its own old leave among them, and a re-admission
		// perhaps after it: it is judged when a catch-up ends
		// (judgeToldBack), never on one event of it. A leave applied
		// while the room was provisional is the judge's too, even when
		// another session confirmed the room before this batch was
		// written: the judgement saw it (both under the room's lock).
		return
	}
	switch {
	case tx.selfLeft:
		r.m.spawn(func() { r.m.closeRoom(r, true) })
	case tx.selfOut:
		r.m.spawn(func() { r.m.closeRoom(r, false) })
	case tx.pruned:
		r.m.spawn(func() { r.m.refreshTopic(r) })
	}
}

// awaitsJoin reports whether member p has not spoken since it was (last)
// admitted, so its invite may need telling again. Callers hold r.mu.
func (r *room) awaitsJoin(p peer.ID) bool {
	if o, ok := r.outs[p]; ok && o.back {
		return r.vv[p] <= o.cutoff
	}
	return r.vv[p] == 0 && r.meta.Creator != p
}

// agentState reports an agent's membership (leaf state; any goroutine).
func (r *room) agentState(addr string) (AgentMember, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[addr]
	return r.maskedLocked(a), ok
}

// maskedLocked returns agent record a, out if its node is not a member: an
// invite that did not bring its node back (invitesIn) still names the
// agent, and its record says in on every node alike. Callers hold r.mu.
func (r *room) maskedLocked(a AgentMember) AgentMember {
	if !a.In {
		return a
	}
	if ad, err := identity.ParseAgentAddr(a.Addr); err == nil && ad.Peer != "" {
		if _, ok := r.members[ad.Peer]; !ok {
			a.In = false
		}
	}
	return a
}

// CreateRoom founds a room named name, with a purpose (one line, may be
// empty), by agent, and returns its ID.
func (m *Manager) CreateRoom(ctx context.Context, name, purpose string, agent identity.AgentName) (identity.RoomID, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	if err := CheckPurpose(purpose); err != nil {
		return "", err
	}
	nonce := make([]byte, roomNonceLen)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	id := DeriveRoomID(m.self, nonce)
	r, err := m.open(id, Meta{Name: name, Purpose: purpose, Creator: m.self, Opened: time.Now().UTC(), Topic: TopicFor(nonce)}, true)
	if err != nil {
		return "", err
	}
	if _, err := r.say(ctx, &sayReq{agent: agent, kind: KindCreate, body: createBody(nonce, name, purpose)}); err != nil {
		return "", fmt.Errorf("rooms: create %q: %w", name, err)
	}
	return id, nil
}

// InviteAgent makes agent name of node target a member of the room, by an
// invite event that names it (agent by invites). A node that is not a member
// yet is admitted by the same event (its consent is checked as for Invite)
// and told; for a member node, the policy must only still allow it. Inviting an agent that is already in returns the event that
// let it in.
func (m *Manager) InviteAgent(ctx context.Context, id identity.RoomID, target peer.ID, name identity.AgentName, by identity.AgentName) (ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return ID{}, err
	}
	if _, err := identity.ParseAgentName(string(name)); err != nil {
		return ID{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	addr := agentAddr(name, target)
	a, ok := r.agentState(addr)
	switch {
	case ok && a.In:
		return a.Event, nil
	case ok && a.Removed() && target == m.self:
		return ID{}, fmt.Errorf("%w: the room's creator removed %s from room %s; only another member node can invite it back", ErrAgentLeft, addr, id)
	}
	r.mu.RLock()
	_, member := r.members[target]
	tell := !member || r.awaitsJoin(target)
	r.mu.RUnlock()
	if target != m.self {
		// A node in the room already was vouched for when it was let in:
		// an agent of it needs only that this node still takes it. Any
		// other node is admitted by this invite, with this node's word.
		if member {
			if err := m.cfg.Policy.Allowed(target); err != nil {
				return ID{}, fmt.Errorf("%w: %w", ErrInviteRefused, err)
			}
			// A member node that is no contact to invite is not sent a
			// notice: it learns of its agent's invite in the room.
			tell = tell && m.cfg.Policy.CanInvite(target) == nil
		} else if err := m.cfg.Policy.CanInvite(target); err != nil {
			return ID{}, err
		}
	}
	eid, err := r.say(ctx, &sayReq{agent: by, kind: KindInvite, body: []byte(target), to: addr})
	if err != nil {
		return ID{}, fmt.Errorf("rooms: invite %s to %s: %w", addr, id, err)
	}
	if target != m.self && tell {
		if err := m.tellInvited(ctx, r, target, eid); err != nil {
			if errors.Is(err, ErrInviteRefused) {
				return eid, fmt.Errorf("rooms: %s is invited to %s, but its node refused the notice: %w", target, id, err)
			}
			return eid, fmt.Errorf("rooms: %s is invited to %s but could not be told yet (it will be when it connects): %w (%w)", target, id, ErrNotToldYet, err)
		}
	}
	return eid, nil
}

// CanInvite returns nil when this node may invite node target now (its
// Policy; this node itself always), else the reason, which wraps
// ErrInviteRefused: what InviteAgent and Invite would refuse, asked before
// anything is made for the invite.
func (m *Manager) CanInvite(target peer.ID) error {
	if target == m.self {
		return nil
	}
	return m.cfg.Policy.CanInvite(target)
}

// LeaveNode takes this node out of the room: it posts its leave (as agent),
// then stops following the room (no topic, no sync) and drops it from its
// room list; members stop sending to it. The history stays in the store,
// and a new invite brings the node back.
func (m *Manager) LeaveNode(ctx context.Context, id identity.RoomID, agent identity.AgentName) (ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return ID{}, err
	}
	return r.say(ctx, &sayReq{agent: agent, kind: KindLeave, body: leaveBody(0, m.self)})
}

// Remove takes member node target out of the room. Only the room's creator
// may; the target's events after the last one this node holds are refused
// by every member, and members stop sending to it.
func (m *Manager) Remove(ctx context.Context, id identity.RoomID, target peer.ID, by identity.AgentName) (ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return ID{}, err
	}
	r.mu.RLock()
	creator := r.meta.Creator
	_, member := r.members[target]
	r.mu.RUnlock()
	switch {
	case creator != m.self:
		return ID{}, fmt.Errorf("%w: room %s was created by %s, which alone removes its members", ErrNotCreator, id, creator)
	case target == m.self:
		return ID{}, fmt.Errorf("%w: this node cannot remove itself from room %s (leave it instead)", ErrMalformed, id)
	case !member:
		return ID{}, fmt.Errorf("%w: %s is not a member of room %s", ErrNotMember, target, id)
	}
	cutoff := r.committedVV()[target]
	eid, err := r.say(ctx, &sayReq{agent: by, kind: KindLeave, body: leaveBody(cutoff, target)})
	if err == nil {
		// The removed node is dropped from the topic's mesh at once, so it
		// would learn of its removal at its next anti-entropy round: tell
		// it now, and it syncs with this node (served up to its removal).
		m.spawn(func() {
			ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
			defer cancel()
			if err := m.tellRemoved(ctx, r, target, eid); err != nil {
				m.log.Debug("removed node not told; it learns at its next sync", "room", string(id), "remote", target.String(), "err", err)
			}
		})
	}
	return eid, err
}

// RemoveAgent takes agent addr (NAME@PEER_ID) of another node out of a room
// this node created: a leave that names it, posted as by. The agent's node
// stays a member; its agent posts nothing more there (its node refuses)
// until an invite names it again, and its events made across the removal
// do not bring it back. An agent of this node is taken out as if it left.
func (m *Manager) RemoveAgent(ctx context.Context, id identity.RoomID, addr identity.AgentAddr, by identity.AgentName) (ID, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return ID{}, err
	}
	if addr.Peer == "" {
		return ID{}, fmt.Errorf("%w: %q names no node: want NAME@PEER_ID", ErrMalformed, addr)
	}
	if addr.Peer == m.self {
		return m.Leave(ctx, id, addr.Name)
	}
	r.procMu.Lock()
	at, err := r.foundedAt()
	r.procMu.Unlock()
	if err != nil {
		return ID{}, err
	}
	r.mu.RLock()
	creator := r.meta.Creator
	a, known := r.agents[addr.String()]
	a = r.maskedLocked(a)
	r.mu.RUnlock()
	switch {
	case creator != m.self:
		return ID{}, fmt.Errorf("%w: room %s was created by %s, which alone removes agents of other nodes from it", ErrNotCreator, id, creator)
	case at < AgentRemovalSince:
		return ID{}, fmt.Errorf("%w: room %s was created before agents could be removed one by one: remove the node (and invite back the agents it wants), or ask it to take %s out", ErrRoomTooOld, id, addr)
	case !known || !a.In:
		return ID{}, fmt.Errorf("%w: %s is not in room %s", ErrNotMember, addr, id)
	}
	return r.say(ctx, &sayReq{agent: by, kind: KindLeave, to: addr.String()})
}

// Agents lists a room's agent records (members and those that left),
// sorted by address.
func (m *Manager) Agents(id identity.RoomID) ([]AgentMember, error) {
	r, err := m.getRoom(id)
	if err != nil {
		return nil, err
	}
	r.mu.RLock()
	out := make([]AgentMember, 0, len(r.agents))
	for _, a := range r.agents {
		out = append(out, r.maskedLocked(a))
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b AgentMember) int { return strings.Compare(a.Addr, b.Addr) })
	return out, nil
}

// AgentState returns the membership record of agent addr (NAME@PEER_ID) in
// a room; ok is false if no event ever named it.
func (m *Manager) AgentState(id identity.RoomID, addr string) (a AgentMember, ok bool, err error) {
	r, err := m.getRoom(id)
	if err != nil {
		return AgentMember{}, false, err
	}
	a, ok = r.agentState(addr)
	return a, ok, nil
}

// closeRoom stops following a room this node is out of: its goroutines,
// topic and validator go, it leaves the room list, and its index entry is
// marked left so a restart does not open it again. With serve set (this
// node left by itself) the room keeps answering its members' sync for
// LeavingServeFor (doneLeaving), so they learn of the leave.
func (m *Manager) closeRoom(r *room, serve bool) {
	m.openMu.Lock()
	defer m.openMu.Unlock()
	m.mu.Lock()
	if m.rooms[r.id] != r {
		m.mu.Unlock()
		return
	}
	delete(m.rooms, r.id)
	m.mu.Unlock()
	m.stopRoom(r)
	if serve {
		m.leaving.add(r)
		r.nudgeMembers(true)
	}
	r.mu.Lock()
	r.meta.Left, r.meta.Leaving = true, serve
	if serve {
		r.meta.LeftAt = m.cfg.Now()
	}
	r.mu.Unlock()
	r.saveMeta()
	m.changed(r.id)
	m.log.Info("left room", "room", string(r.id), "waiting_for_members", serve)
}

// stopRoom stops a room taken out of m.rooms: its goroutines (none is
// started again), its topic and its listeners.
func (m *Manager) stopRoom(r *room) {
	m.spawnMu.Lock()
	r.cancel()
	m.spawnMu.Unlock()
	r.wg.Wait()
	m.leaveTopic(r)
	r.closeListeners()
	// No goroutine of the room runs: its pool is free to clear, and its
	// part of the node's pending share goes back.
	r.pending.Clear()
	r.pendingLen.Store(0)
}

// saveMeta writes the room's index entry.
func (r *room) saveMeta() {
	r.mu.RLock()
	raw, err := json.Marshal(r.meta)
	r.mu.RUnlock()
	if err == nil {
		err = r.m.cfg.Store.Apply([]schema.Op{{Key: schema.RoomIndex(string(r.id)), Val: raw}}, false)
	}
	if err != nil {
		r.m.log.Warn("room index not written", "room", string(r.id), "err", err)
	}
}

// leaving holds the rooms this node left less than LeavingServeFor ago.
// They run no goroutine; they only answer sync.
type leaving struct {
	mu    sync.Mutex // protects rooms
	rooms map[identity.RoomID]*room
}

func (l *leaving) add(r *room) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rooms == nil {
		l.rooms = make(map[identity.RoomID]*room)
	}
	l.rooms[r.id] = r
}

func (l *leaving) drop(id identity.RoomID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.rooms, id)
}

func (l *leaving) get(id identity.RoomID) *room {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rooms[id]
}

// keepLeaving loads a room this node left before a restart, whose
// LeavingServeFor is not over, to answer sync for it.
func (m *Manager) keepLeaving(id identity.RoomID, meta Meta) {
	now := m.cfg.Now()
	if meta.LeftAt.IsZero() { // left before the time was kept: from now
		meta.LeftAt = now
	}
	r := newRoom(m, id, meta)
	if now.Sub(meta.LeftAt) > LeavingServeFor {
		m.doneLeaving(r, "its time is over")
		return
	}
	r.saveMeta()
	if err := r.load(); err != nil {
		m.log.Warn("room left, but cannot be loaded to hand out the leave", "room", string(id), "err", err)
		return
	}
	m.leaving.add(r)
}

// reopenMeta is the metadata for a room this node is invited into: what it
// knew of the room, if it was in it before, else meta.
func (m *Manager) reopenMeta(id identity.RoomID, meta Meta) Meta {
	raw, ok, err := m.cfg.Store.Lookup(schema.RoomIndex(string(id)))
	var old Meta
	if err != nil || !ok || json.Unmarshal(raw, &old) != nil || old.Creator == "" {
		return meta
	}
	meta.Name, meta.Purpose, meta.Creator = old.Name, old.Purpose, old.Creator
	if old.Topic != "" {
		meta.Topic = old.Topic
	}
	return meta
}

// LeftRoom reports whether this node is out of room id (it left, or was
// removed), and the room's name.
func (m *Manager) LeftRoom(id identity.RoomID) (name string, left bool) {
	if m.room(id) != nil {
		return "", false
	}
	raw, ok, err := m.cfg.Store.Lookup(schema.RoomIndex(string(id)))
	var meta Meta
	if err != nil || !ok || json.Unmarshal(raw, &meta) != nil {
		return "", false
	}
	return meta.Name, meta.Left
}

// LeftByName returns the rooms named name that this node is out of (its
// agents left them, or it was removed).
func (m *Manager) LeftByName(name string) []identity.RoomID {
	var out []identity.RoomID
	_ = m.cfg.Store.ScanFrom(schema.RoomIndexPrefix(), nil, false, func(k, v []byte) bool {
		var meta Meta
		if json.Unmarshal(v, &meta) != nil || !meta.Left || meta.Name != name {
			return true
		}
		if id, err := identity.ParseRoomID(string(k[len(schema.RoomIndexPrefix()):])); err == nil && m.room(id) == nil {
			out = append(out, id)
		}
		return true
	})
	return out
}

// syncRoom is the room to answer a sync request for: an open one, or one
// this node is leaving (until LeavingServeFor is over).
func (m *Manager) syncRoom(id identity.RoomID) *room {
	if r := m.room(id); r != nil {
		return r
	}
	r := m.leaving.get(id)
	if r != nil && r.leavingOver() {
		m.doneLeaving(r, "its time is over")
		return nil
	}
	return r
}

// LeavingServeFor is how long a node that left a room serves its sync to
// the room's members. Not less, whatever a member shows: one that holds
// the leave may be the only one, and go away (or be cut off by the
// others), and members that got the leave by gossip never pull it.
const LeavingServeFor = 14 * 24 * time.Hour

// doneLeaving ends serving room r, which this node left LeavingServeFor
// ago.
func (m *Manager) doneLeaving(r *room, why string) {
	m.leaving.mu.Lock()
	if m.leaving.rooms[r.id] == r {
		delete(m.leaving.rooms, r.id)
	}
	m.leaving.mu.Unlock()
	r.mu.Lock()
	r.meta.Leaving = false
	r.mu.Unlock()
	r.saveMeta()
	m.log.Info("left room no longer served", "room", string(r.id), "why", why)
}

// leavingOver reports whether this node has served room r, which it left,
// for LeavingServeFor.
func (r *room) leavingOver() bool {
	r.mu.RLock()
	at := r.meta.LeftAt
	r.mu.RUnlock()
	return !at.IsZero() && r.m.cfg.Now().Sub(at) > LeavingServeFor
}

// refreshTopic leaves the room's topic and joins it again, so the GossipSub
// mesh is built anew through PeerFilter: a node that left or was removed is
// pruned (a peer filter only vets peers that join a mesh). Gossip missed in
// between comes through sync.
func (m *Manager) refreshTopic(r *room) {
	m.openMu.Lock()
	defer m.openMu.Unlock()
	if m.room(r.id) != r || r.ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	t, unsub := r.topic, r.unsub
	r.mu.Unlock()
	if t == nil {
		return // no topic yet: the mesh is built when the room joins one
	}
	// GossipSub's event loop takes the cancel before the new
	// subscription, so it leaves the topic and joins it again.
	unsub()
	again, err := r.subscribe(t)
	if err != nil {
		m.log.Error("rejoin room topic failed", "room", string(r.id), "err", err)
		return
	}
	r.mu.Lock()
	r.unsub = again
	r.mu.Unlock()
	for _, p := range r.memberList() {
		if p != m.self {
			r.requestSync(p)
		}
	}
}

// goRoom runs f on a goroutine of the room: it ends with the room, and
// Close and closeRoom wait for it. It reports false, starting nothing,
// once the room closes.
func (r *room) goRoom(f func(ctx context.Context)) bool {
	if !r.enter() {
		return false
	}
	go func() {
		defer r.leave()
		f(r.ctx)
	}()
	return true
}

// enter counts the caller as one of the room's goroutines (Close and
// closeRoom wait for it to leave); false once the room closes.
func (r *room) enter() bool {
	r.m.spawnMu.Lock()
	defer r.m.spawnMu.Unlock()
	// closeRoom cancels ctx under spawnMu: no goroutine enters once it waits.
	if r.m.closing || r.ctx == nil || r.ctx.Err() != nil {
		return false
	}
	r.m.wg.Add(1)
	r.wg.Add(1)
	return true
}

// leave ends what enter began.
func (r *room) leave() {
	r.wg.Done()
	r.m.wg.Done()
}
