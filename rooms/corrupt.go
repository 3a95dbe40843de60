package rooms

import (
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Damaged events. The store checks Badger's checksums and the room checks
// each event it reads against its ID, so damage on disk reads as
// ErrCorrupt, never as an event. A damaged event is then wanted (Hello.Want)
// from the room's members in the next syncs; the copy that comes back is
// checked like any event (its ID is the hash of its bytes) and written over
// the damaged one.

// maxCorrupt bounds the damaged events a room remembers to fetch.
const maxCorrupt = MaxWant

// noteCorrupt records a damaged event and asks a member for it. Any
// goroutine.
func (r *room) noteCorrupt(id ID) {
	r.mu.Lock()
	_, known := r.corrupt[id]
	if !known && len(r.corrupt) < maxCorrupt {
		r.corrupt[id] = true
		r.nCorrupt.Store(int64(len(r.corrupt)))
	}
	r.mu.Unlock()
	if !known {
		r.m.metrics.corrupt.Inc()
		r.m.log.Error("a stored event is damaged; fetching it again from the members", "room", string(r.id), "id", id.String())
	}
	if p := r.randomMember(); p != "" {
		r.requestSync(p)
	}
}

// corruptIDs lists the damaged events to fetch.
func (r *room) corruptIDs() []ID {
	if r.nCorrupt.Load() == 0 {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]ID, 0, len(r.corrupt))
	for id := range r.corrupt {
		out = append(out, id)
	}
	return out
}

// repair writes a good copy of a damaged event over it, and reports
// whether it was one. Its caller holds procMu.
func (r *room) repair(tx *txn, it Item) bool {
	if r.nCorrupt.Load() == 0 {
		return false
	}
	r.mu.Lock()
	bad := r.corrupt[it.ID]
	if bad {
		r.repairs++
	}
	delete(r.corrupt, it.ID)
	r.nCorrupt.Store(int64(len(r.corrupt)))
	r.mu.Unlock()
	if !bad {
		return false
	}
	tx.markEvent()
	tx.ops = append(tx.ops, schema.Op{Key: storedKey(r.id, it.ID), Val: storedEvent(it.Event.Depth, it.Wire)})
	// Loaded damaged, its parents stayed heads (tip.go): with them known
	// again, they are not.
	for _, p := range it.Event.Parents {
		delete(r.heads, p)
		delete(r.headTime, p)
	}
	if _, ok := r.heads[it.ID]; ok {
		r.heads[it.ID] = it.Event.Depth
		r.headTime[it.ID] = it.Event.Time
	}
	r.m.metrics.repaired.Inc()
	r.m.log.Info("a damaged event was fetched again", "room", string(r.id), "id", it.ID.String())
	return true
}

// holdsRecent reports whether the room stored event id lately (its recent
// events' depths), undamaged as far as it knows (a damaged one is to be
// fetched again). Any goroutine.
func (r *room) holdsRecent(id ID) bool {
	if _, ok := r.recent.get(id); !ok {
		return false
	}
	if r.nCorrupt.Load() == 0 {
		return true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return !r.corrupt[id]
}
