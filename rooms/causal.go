package rooms

import (
	"encoding/binary"
	"slices"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Less reports whether the event (depthA, idA) comes before (depthB, idB) in
// display order: by depth, then by event ID bytes. Every node shows a room's
// events in this order, which extends the causal order.
func Less(depthA uint64, idA ID, depthB uint64, idB ID) bool {
	if depthA != depthB {
		return depthA < depthB
	}
	return idA.Compare(idB) < 0
}

// OrderKeyLen is the length of an OrderKey.
const OrderKeyLen = 8 + len(ID{})

// OrderKey returns depth as 8 bytes big-endian followed by the 32 bytes of
// id, so that a byte-ordered store iterates events in display order.
func OrderKey(depth uint64, id ID) []byte {
	k := make([]byte, OrderKeyLen)
	binary.BigEndian.PutUint64(k, depth)
	copy(k[8:], id[:])
	return k
}

// Limits of a Pending pool.
const (
	// DefaultPendingEvents is the event bound NewPending uses when given 0.
	DefaultPendingEvents = 4096
	// DefaultPendingBytes is the byte bound NewPending uses when given 0.
	DefaultPendingBytes = 16 << 20
	// DefaultPendingTotalEvents and DefaultPendingTotalBytes bound the
	// pending pools of all of a node's rooms together (PendingShare).
	DefaultPendingTotalEvents = 16384
	DefaultPendingTotalBytes  = 64 << 20
	// StrangerPendingEvents and StrangerPendingBytes bound, within a pool,
	// the events whose author the node's policy refused when they came
	// (AddFrom): such an event can only be taken once the event admitting
	// its author is stored, which a catch-up brings before it, so a member
	// that sends a stranger's events with parents that never come (sync
	// does not vet authors before the parents are stored) fills no more.
	StrangerPendingEvents = 256
	StrangerPendingBytes  = 2 << 20
	// PendingReserveEvents and PendingReserveBytes are what a pool holds
	// past a full share, while the pools together stay under twice the
	// share's bounds: a contact that fills the share with its own orphans
	// in a few rooms leaves other rooms this much each to hold events
	// that came before their parents (unless it fills the reserves of
	// hundreds of rooms too).
	PendingReserveEvents = 64
	PendingReserveBytes  = 256 << 10
	// MaxDeps is the largest number of missing dependencies of one pending
	// event: its parents plus any extra IDs the caller waits for.
	MaxDeps = 64
	// MaxMissing is the most IDs Pending.Missing returns; it equals the
	// number of IDs a Hello may want.
	MaxMissing = MaxWant
)

// Accounting per pending item, beyond its wire and body bytes, for the
// byte bound: the item, its decoded event and its map entries (itemOverhead),
// and per dependency its waiter set and list entry (depOverhead). These are
// measured estimates for 64-bit platforms.
const (
	itemOverhead = 512
	depOverhead  = 384
)

// Item is an event that waits in a Pending pool, or that Ready released.
type Item struct {
	ID    ID
	Event *Event
	Wire  []byte
}

// pendingItem is an Item with what it still waits for and its place in the
// pool's insertion order (oldest first), used for eviction.
type pendingItem struct {
	Item
	missing    []ID // dependencies not yet stored; never empty while pooled
	cost       int
	stranger   bool // its author was refused by the policy when it came
	prev, next *pendingItem
}

// PendingShare bounds several Pending pools together (a node's rooms): a
// pool past its reserve (PendingReserveEvents, PendingReserveBytes) that
// would take the total past a bound evicts its own oldest items first,
// down to its reserve; within its reserve it takes items until the total
// is twice the bounds, which the pools never pass. Safe for concurrent use
// by the pools' owners: a pool checks the total and takes its part in one
// step, so pools that add at once do not pass a bound together.
type PendingShare struct {
	maxEvents, maxBytes int64
	// held packs the events held (the bits from shareBytesBits up) and
	// their bytes (the bits below) into one word, checked and changed
	// with one compare-and-swap.
	held atomic.Uint64
}

// shareBytesBits is the width of the byte count in PendingShare.held; the
// event count has the 24 bits above it. NewPendingShare bounds maxEvents
// and maxBytes so that twice each fits.
const (
	shareBytesBits = 40
	shareBytesMask = 1<<shareBytesBits - 1
	shareMaxEvents = 1<<(63-shareBytesBits) - 1
	shareMaxBytes  = 1<<(shareBytesBits-1) - 1
)

// NewPendingShare returns a share of maxEvents items and about maxBytes of
// memory; zero or negative bounds select DefaultPendingTotalEvents and
// DefaultPendingTotalBytes. Bounds above about 8 million events or 512 GiB
// are taken as those.
func NewPendingShare(maxEvents, maxBytes int) *PendingShare {
	if maxEvents <= 0 {
		maxEvents = DefaultPendingTotalEvents
	}
	if maxBytes <= 0 {
		maxBytes = DefaultPendingTotalBytes
	}
	return &PendingShare{maxEvents: min(int64(maxEvents), shareMaxEvents), maxBytes: min(int64(maxBytes), shareMaxBytes)}
}

// load returns the events and bytes the share holds.
func (s *PendingShare) load() (events, bytes int64) {
	v := s.held.Load()
	return int64(v >> shareBytesBits), int64(v & shareBytesMask)
}

// Bytes returns the memory the pools of the share hold, approximately.
func (s *PendingShare) Bytes() int {
	_, b := s.load()
	return int(b)
}

// Events returns the number of events the pools of the share hold.
func (s *PendingShare) Events() int {
	e, _ := s.load()
	return int(e)
}

// take counts one more item of cost against the share if that passes no
// bound (twice the bounds with ceiling set: a pool within its reserve),
// and reports whether it did. The check and the count are one step.
func (s *PendingShare) take(cost int, ceiling bool) bool {
	if s == nil {
		return true
	}
	maxE, maxB := s.maxEvents, s.maxBytes
	if ceiling {
		maxE, maxB = 2*maxE, 2*maxB
	}
	for {
		v := s.held.Load()
		e, b := int64(v>>shareBytesBits), int64(v&shareBytesMask)
		if e+1 > maxE || b+int64(cost) > maxB {
			return false
		}
		if s.held.CompareAndSwap(v, v+1<<shareBytesBits+uint64(cost)) {
			return true
		}
	}
}

// give takes back one item of cost that take counted.
func (s *PendingShare) give(cost int) {
	if s != nil {
		s.held.Add(-(1<<shareBytesBits + uint64(cost)))
	}
}

// Pending is a bounded pool of events whose dependencies (parents, and any
// extra IDs the caller names) are not stored yet. It holds at most maxEvents
// items and about maxBytes of memory; when full, the oldest items are
// evicted. Evicted events are simply forgotten: they come back through
// gossip or sync, and their IDs appear in Missing while others wait on them.
//
// The protocol of use, for the one goroutine that owns a room:
//
//	e, id, err := Decode(wire)            // then: already stored? skip
//	missing := parents of e not stored     // pending ones count as missing
//	if len(missing) > 0 { p.Add(id, e, wire, missing); return }
//	queue := []Item{{id, e, wire}}
//	for len(queue) > 0 {
//		it := queue[0]; queue = queue[1:]
//		if check and store it succeed { queue = append(queue, p.Ready(it.ID)...) }
//		else { p.Discard(it.ID) }
//	}
//
// Ready must be called for every ID that becomes stored, however it
// arrived. An item is released only when all its dependencies are stored,
// so the loop above stores events in causal order, iteratively, however
// long the chain. Pending is not safe for concurrent use.
type Pending struct {
	maxEvents, maxBytes int
	bytes               int
	share               *PendingShare // nil: this pool's bounds alone
	strangers           int           // pooled items whose author was refused
	strangerBytes       int
	// byStranger holds the items pooled as strangers' by author, so that
	// an author's admission unmarks its items without a walk of the pool.
	byStranger map[peer.ID]map[*pendingItem]struct{}
	// stillStranger, if set, is asked before an item pooled as a
	// stranger's is evicted for another's (Vet).
	stillStranger func(author peer.ID) bool
	items         map[ID]*pendingItem
	// waiters maps a dependency to the pooled items that wait for it.
	waiters        map[ID]map[ID]struct{}
	oldest, newest *pendingItem
	// missFrom is the item Missing starts from next (the oldest when it
	// is not pooled).
	missFrom ID
}

// NewPending returns an empty pool bounded to maxEvents items and about
// maxBytes of memory. Zero or negative bounds select DefaultPendingEvents
// and DefaultPendingBytes.
func NewPending(maxEvents, maxBytes int) *Pending {
	if maxEvents <= 0 {
		maxEvents = DefaultPendingEvents
	}
	if maxBytes <= 0 {
		maxBytes = DefaultPendingBytes
	}
	return &Pending{
		maxEvents:  maxEvents,
		maxBytes:   maxBytes,
		items:      make(map[ID]*pendingItem),
		waiters:    make(map[ID]map[ID]struct{}),
		byStranger: make(map[peer.ID]map[*pendingItem]struct{}),
	}
}

// Share makes the pool count against s as well as its own bounds. Call it
// before the first Add.
func (p *Pending) Share(s *PendingShare) { p.share = s }

// Vet makes the pool ask still, before it evicts an item pooled as a
// stranger's to make room for another stranger's, whether the item's
// author is a stranger still; if not (admitted since in a way the pool
// was not told of by Admit), its items count as a member's from then on.
// Call it before the first Add.
func (p *Pending) Vet(still func(author peer.ID) bool) { p.stillStranger = still }

// HoldsStranger reports whether items of author are pooled as a
// stranger's.
func (p *Pending) HoldsStranger(author peer.ID) bool {
	_, ok := p.byStranger[author]
	return ok
}

// Admit makes the items of author pooled as a stranger's count as a
// member's (its author is admitted now): they leave the strangers' share
// and are no longer evicted first for another stranger's. It costs a map
// lookup when there are none.
func (p *Pending) Admit(author peer.ID) {
	for it := range p.byStranger[author] {
		it.stranger = false
		p.strangers--
		p.strangerBytes -= it.cost
	}
	delete(p.byStranger, author)
}

// authorOf is the author of a pooled event, or "" for none.
func authorOf(e *Event) peer.ID {
	if e == nil {
		return ""
	}
	return e.Author
}

// Clear drops every pooled item (the pool's room is closed), giving its
// part of the share back.
func (p *Pending) Clear() {
	for p.oldest != nil {
		p.remove(p.oldest)
	}
	clear(p.waiters)
}

// Len returns the number of pooled events.
func (p *Pending) Len() int { return len(p.items) }

// Bytes returns the approximate memory the pooled events hold.
func (p *Pending) Bytes() int { return p.bytes }

// WaitsFor returns what pooled item id still waits for (nil if it is not
// pooled). The caller must not modify it.
func (p *Pending) WaitsFor(id ID) []ID {
	if it, ok := p.items[id]; ok {
		return it.missing
	}
	return nil
}

// Event returns the event of pooled item id, or nil.
func (p *Pending) Event(id ID) *Event {
	if it, ok := p.items[id]; ok {
		return it.Event
	}
	return nil
}

// Has reports whether id is pooled.
func (p *Pending) Has(id ID) bool {
	_, ok := p.items[id]
	return ok
}

// Add pools the event id until every ID in missing is stored, evicting the
// oldest items if the pool is full. It keeps e and wire (which must not be
// modified afterwards) and copies missing. It reports false, and pools
// nothing, if id is already pooled, if missing is empty (store the event
// now) or has more than MaxDeps distinct IDs or contains id itself, or if
// the event alone exceeds the byte bound.
func (p *Pending) Add(id ID, e *Event, wire []byte, missing []ID) (added bool) {
	return p.AddFrom(id, e, wire, missing, false)
}

// AddFrom is Add for an event whose author the node's policy refused when
// it came (stranger): such items are held within StrangerPendingEvents and
// StrangerPendingBytes, the oldest of them evicted first. A pool that is
// part of a share, past its reserve, and would take the share past a bound
// evicts its own oldest items down to its reserve.
func (p *Pending) AddFrom(id ID, e *Event, wire []byte, missing []ID, stranger bool) (added bool) {
	if _, dup := p.items[id]; dup || len(missing) == 0 {
		return false
	}
	deps := SortIDs(slices.Clone(missing))
	if len(deps) > MaxDeps {
		return false
	}
	if _, self := slices.BinarySearchFunc(deps, id, ID.Compare); self {
		return false
	}
	cost := itemOverhead + len(wire) + len(deps)*depOverhead
	if e != nil {
		cost += len(e.Body)
	}
	if cost > p.maxBytes || stranger && cost > StrangerPendingBytes {
		return false
	}
	if stranger {
		for it := p.oldest; it != nil && (p.strangers >= StrangerPendingEvents || p.strangerBytes+cost > StrangerPendingBytes); {
			next := it.next
			if it.stranger {
				if a := authorOf(it.Event); p.stillStranger != nil && !p.stillStranger(a) {
					p.Admit(a)
				} else {
					p.remove(it)
				}
			}
			it = next
		}
	}
	for p.oldest != nil && (len(p.items) >= p.maxEvents || p.bytes+cost > p.maxBytes) {
		p.remove(p.oldest)
	}
	// Past its reserve a pool holds what the share leaves; within it, what
	// twice the share leaves.
	for !p.share.take(cost, len(p.items)+1 <= PendingReserveEvents && p.bytes+cost <= PendingReserveBytes) {
		if p.oldest == nil {
			return false
		}
		p.remove(p.oldest)
	}
	it := &pendingItem{Item: Item{ID: id, Event: e, Wire: wire}, missing: deps, cost: cost, stranger: stranger}
	p.items[id] = it
	p.bytes += cost
	if stranger {
		p.strangers++
		p.strangerBytes += cost
		a := authorOf(e)
		if p.byStranger[a] == nil {
			p.byStranger[a] = make(map[*pendingItem]struct{}, 1)
		}
		p.byStranger[a][it] = struct{}{}
	}
	it.prev = p.newest
	if p.newest != nil {
		p.newest.next = it
	} else {
		p.oldest = it
	}
	p.newest = it
	for _, d := range deps {
		w := p.waiters[d]
		if w == nil {
			w = make(map[ID]struct{}, 1)
			p.waiters[d] = w
		}
		w[id] = struct{}{}
	}
	return true
}

// Ready records that stored is now stored and returns, in display order,
// the pooled items that no longer miss anything; they leave the pool. The
// items returned by one call do not depend on each other. If stored was
// itself pooled it is dropped from the pool.
func (p *Pending) Ready(stored ID) []Item {
	if it, ok := p.items[stored]; ok {
		p.remove(it)
	}
	ws := p.waiters[stored]
	delete(p.waiters, stored)
	var out []Item
	for wid := range ws {
		it := p.items[wid]
		if i := slices.Index(it.missing, stored); i >= 0 {
			it.missing = slices.Delete(it.missing, i, i+1)
		}
		if len(it.missing) == 0 {
			p.remove(it)
			out = append(out, it.Item)
		}
	}
	slices.SortFunc(out, func(a, b Item) int {
		switch {
		case Less(depthOf(a.Event), a.ID, depthOf(b.Event), b.ID):
			return -1
		case a.ID == b.ID:
			return 0
		}
		return 1
	})
	return out
}

func depthOf(e *Event) uint64 {
	if e == nil {
		return 0
	}
	return e.Depth
}

// Discard drops id from the pool, if there, and every pooled item that
// waits on it directly or indirectly: use it when id was refused, since
// nothing that depends on it can be delivered. It returns the IDs dropped.
func (p *Pending) Discard(id ID) []ID {
	var gone []ID
	if it, ok := p.items[id]; ok {
		p.remove(it)
		gone = append(gone, id)
	}
	queue := []ID{id}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		ws := p.waiters[d]
		delete(p.waiters, d)
		for wid := range ws {
			if it, ok := p.items[wid]; ok {
				p.remove(it)
				gone = append(gone, wid)
				queue = append(queue, wid)
			}
		}
	}
	return gone
}

// WaitedOnBy reports whether a pooled item for whose event want is true
// waits for id directly.
func (p *Pending) WaitedOnBy(id ID, want func(*Event) bool) bool {
	for wid := range p.waiters[id] {
		if it, ok := p.items[wid]; ok && want(it.Event) {
			return true
		}
	}
	return false
}

// NeededBy reports whether a pooled item for whose event want is true
// waits for id, directly or through other pooled items.
func (p *Pending) NeededBy(id ID, want func(*Event) bool) bool {
	seen := make(map[ID]bool)
	queue := []ID{id}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for wid := range p.waiters[d] {
			it, ok := p.items[wid]
			if !ok || seen[wid] {
				continue
			}
			seen[wid] = true
			if want(it.Event) {
				return true
			}
			queue = append(queue, wid)
		}
	}
	return false
}

// Missing returns up to MaxMissing IDs that pooled items wait for and that
// are not pooled themselves: the events to fetch. The dependencies of older
// items come first, from where the last call stopped on: with more than
// MaxMissing, calls in a row name them all in turn, so IDs no one holds (a
// member's events whose parents never come) cannot fill every Hello's want
// for good and keep a fork's events out.
func (p *Pending) Missing() []ID {
	var out []ID
	seen := make(map[ID]struct{})
	it := p.oldest
	if from, ok := p.items[p.missFrom]; ok {
		it = from
	}
	for n := 0; it != nil && n < len(p.items); n++ {
		full := false
		for _, d := range it.missing {
			if _, pooled := p.items[d]; pooled {
				continue
			}
			if _, dup := seen[d]; dup {
				continue
			}
			if len(out) == MaxMissing {
				full = true // the rest of its dependencies, next time
				break
			}
			seen[d] = struct{}{}
			out = append(out, d)
		}
		if full {
			break
		}
		it = it.next
		if it == nil {
			it = p.oldest
		}
	}
	if it != nil {
		p.missFrom = it.ID
	}
	return out
}

// remove takes it out of the pool, its order list and its waiter entries.
func (p *Pending) remove(it *pendingItem) {
	delete(p.items, it.ID)
	p.bytes -= it.cost
	p.share.give(it.cost)
	if it.stranger {
		p.strangers--
		p.strangerBytes -= it.cost
		a := authorOf(it.Event)
		if w := p.byStranger[a]; w != nil {
			delete(w, it)
			if len(w) == 0 {
				delete(p.byStranger, a)
			}
		}
	}
	if it.prev != nil {
		it.prev.next = it.next
	} else {
		p.oldest = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	} else {
		p.newest = it.prev
	}
	it.prev, it.next = nil, nil
	for _, d := range it.missing {
		if w := p.waiters[d]; w != nil {
			delete(w, it.ID)
			if len(w) == 0 {
				delete(p.waiters, d)
			}
		}
	}
}
