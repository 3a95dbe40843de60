package rooms

// Recent views. Readers of the arrival log (Since: agents' inboxes, the
// audit of membership decisions, the dashboard) read what the room just
// stored, right after it is stored. The room keeps the views of its last
// recentViews arrivals while its goroutine runs, so those reads take the
// event as the room decoded it instead of reading, hashing and decoding it
// again; an idle room drops them (its goroutine stops), so they cost no
// memory in the many rooms that are quiet.

// recentViews is how many of its latest arrivals a busy room keeps.
const recentViews = 256

// arrivalView is the view of the event at arrival n.
type arrivalView struct {
	n uint64
	v View
}

// keepViews remembers the views of a written batch. Its caller holds
// procMu; it runs after the batch's write succeeded and before the
// readers are told (Manager.changed): viewsSince hands out what it kept
// as stored.
func (r *room) keepViews(tx *txn) {
	if len(tx.arrivals) == 0 {
		return
	}
	r.viewMu.Lock()
	defer r.viewMu.Unlock()
	if r.views == nil {
		r.views = make([]arrivalView, recentViews)
	}
	for i, n := range tx.arrivals {
		r.views[n%recentViews] = arrivalView{n: n, v: tx.accepted[i]}
	}
}

// dropViews forgets the recent views (the room's goroutine stops).
func (r *room) dropViews() {
	r.viewMu.Lock()
	r.views = nil
	r.viewMu.Unlock()
}

// recentView returns the view of event id at arrival n if the room keeps
// it. Any goroutine.
func (r *room) recentView(n uint64, id ID) (View, bool) {
	r.viewMu.Lock()
	defer r.viewMu.Unlock()
	if r.views == nil {
		return View{}, false
	}
	av := r.views[n%recentViews]
	if av.n != n || av.v.ID != id {
		return View{}, false
	}
	return av.v, true
}

// viewsSince returns the views of arrivals after+1, after+2, … (at most
// limit) when the room keeps after+1: then it keeps every later arrival
// up to the latest it kept, so Since needs no store scan. ok is false when
// it does not keep after+1 (too old, or not kept yet): read the store.
func (r *room) viewsSince(after uint64, limit int) (out []View, ok bool) {
	r.viewMu.Lock()
	defer r.viewMu.Unlock()
	if r.views == nil || r.views[(after+1)%recentViews].n != after+1 {
		return nil, false
	}
	k := 0 // the arrivals kept from after+1 on
	for k < limit && r.views[(after+1+uint64(k))%recentViews].n == after+1+uint64(k) {
		k++
	}
	out = make([]View, k)
	for i := range out {
		out[i] = r.views[(after+1+uint64(i))%recentViews].v
		out[i].Arrival = after + 1 + uint64(i)
	}
	return out, true
}
