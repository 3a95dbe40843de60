package rooms

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// A room's heads and version vector live in memory. The store keeps them
// as a tip: the heads and authors' seqs as of one arrival, written after
// the batch that reaches every tipEvery-th arrival. Loading reads
// the tip and replays what the events that arrived after it did (each
// takes its parents out of the heads, is a head, and moves its author's
// seq on) from the arrival log. Before, every event wrote its head, took
// its parents' heads out and wrote its author's seq: three keys of the
// seven an event wrote.
//
// A store written before has no tip but those keys (r/<room>/h/ and
// r/<room>/v/): load reads them once, writes a tip in their place and
// deletes them.

// DefaultTipEvery is how many arrivals pass between two tips: while tips
// are written, at most this many events, plus those of the batch that
// reached it, are replayed on load.
const DefaultTipEvery = 256

// tipEvery is DefaultTipEvery but in tests (SetTipEvery).
var tipEvery atomic.Int64

func init() { tipEvery.Store(DefaultTipEvery) }

// tip is the value at schema.RoomTip: the heads and the version vector as
// they were once the room had stored arrival events.
type tip struct {
	arrival uint64
	vv      map[peer.ID]uint64
	heads   map[ID]uint64
}

// marshal encodes t: the arrival (8 bytes, big-endian); the count of
// authors (4 bytes), each as schema.PeerBytes then its seq (8 bytes); the
// count of heads (4 bytes), each as its ID then its depth (8 bytes).
// Authors and heads are sorted, so a tip has one encoding.
func (t tip) marshal() []byte {
	authors := make([]peer.ID, 0, len(t.vv))
	for a := range t.vv {
		authors = append(authors, a)
	}
	slices.Sort(authors)
	heads := make([]ID, 0, len(t.heads))
	for id := range t.heads {
		heads = append(heads, id)
	}
	heads = SortIDs(heads)
	b := make([]byte, 0, 16+len(authors)*48+len(heads)*40)
	b = binary.BigEndian.AppendUint64(b, t.arrival)
	b = binary.BigEndian.AppendUint32(b, uint32(len(authors)))
	for _, a := range authors {
		b = append(b, schema.PeerBytes([]byte(a))...)
		b = binary.BigEndian.AppendUint64(b, t.vv[a])
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(heads)))
	for _, id := range heads {
		b = append(b, id[:]...)
		b = binary.BigEndian.AppendUint64(b, t.heads[id])
	}
	return b
}

// unmarshalTip decodes a tip, refusing anything marshal does not write:
// short or trailing bytes, counts the bytes cannot hold, an author that
// is no peer ID, authors or heads out of order (or twice).
func unmarshalTip(b []byte) (tip, error) {
	bad := func(what string) (tip, error) {
		return tip{}, fmt.Errorf("%w: room tip: %s", ErrCorrupt, what)
	}
	if len(b) < 12 {
		return bad("too short")
	}
	t := tip{arrival: binary.BigEndian.Uint64(b), vv: make(map[peer.ID]uint64), heads: make(map[ID]uint64)}
	n := binary.BigEndian.Uint32(b[8:])
	b = b[12:]
	var last peer.ID
	if uint64(n) > uint64(len(b))/10 { // an author takes 10 bytes at least
		return bad("author count")
	}
	for range n {
		if len(b) == 0 {
			return bad("author")
		}
		l := int(b[0])
		if l == 0 || len(b) < 1+l+8 {
			return bad("author")
		}
		a, err := peer.IDFromBytes(b[1 : 1+l])
		if err != nil {
			return bad("author is no peer ID")
		}
		if len(t.vv) > 0 && a <= last {
			return bad("authors out of order")
		}
		last = a
		t.vv[a] = binary.BigEndian.Uint64(b[1+l:])
		b = b[1+l+8:]
	}
	if len(b) < 4 {
		return bad("no head count")
	}
	n = binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(len(b)) != uint64(n)*40 {
		return bad("head count")
	}
	var prev ID
	for k := range n {
		id := ID(b[:32])
		if k > 0 && id.Compare(prev) <= 0 {
			return bad("heads out of order")
		}
		prev = id
		t.heads[id] = binary.BigEndian.Uint64(b[32:])
		b = b[40:]
	}
	return t, nil
}

// tipDue reports whether a batch that began after arrival from and ends
// after r.arrivals reached a multiple of tipEvery, or the room owes a tip.
func (r *room) tipDue(from uint64) bool {
	every := uint64(tipEvery.Load())
	return r.owesTip || r.arrivals/every > from/every
}

// takeTip records the room's tip as of the batch's last event, to write
// once the batch is (writeTip).
func (r *room) takeTip(tx *txn) {
	r.mu.RLock()
	t := tip{arrival: r.arrivals, vv: r.vv, heads: r.heads}
	v := t.marshal()
	r.mu.RUnlock()
	tx.tip = &schema.Op{Key: schema.RoomTip(string(r.id)), Val: v}
}

// writeTip writes the tip of a batch that was stored whole, in a
// transaction of its own after the batch's: it follows its events in the
// store's order (a tip load finds past the last arrival is rebuilt), and
// a large one (a room of thousands of authors) does not make the batch's
// last transaction too large. One that fails is tried again at the next
// tipEvery-th arrival (not with every batch: a tip too large to write
// would cost each one its encoding and a warning).
func (r *room) writeTip(tx *txn) {
	r.owesTip = false
	if err := r.apply([]schema.Op{*tx.tip}, true); err != nil {
		r.m.log.Warn("room tip not written; loading replays the events since the last one", "room", string(r.id), "err", err)
	}
}

// loaded is what loadTip read.
type loaded struct {
	heads map[ID]uint64
	vv    map[peer.ID]uint64
	// legacy are the deletes of the head and seq keys a store written
	// before tips keeps; migrate says the state was read from them, and a
	// tip must replace them.
	legacy  []schema.Op
	migrate bool
	// damaged are events after the tip the store could not read back.
	// Each that tells its depth is taken for a head (its parents are not
	// known), and the version vector is read from the sequence index.
	damaged []ID
	// owesTip: the tip could not be read, or tipEvery events or more were
	// replayed after it; the next batch writes one.
	owesTip bool
}

// loadTip reads the room's heads and version vector: the tip and the
// events that arrived after it, up to arrivals. A store written before
// tips holds them as keys: they are read, with the deletes that take
// them out once a tip replaces them. A tip that cannot be read is
// rebuilt from every event stored.
func (r *room) loadTip(arrivals uint64) (loaded, error) {
	db, rid := r.m.cfg.Store, string(r.id)
	l := loaded{heads: make(map[ID]uint64), vv: make(map[peer.ID]uint64)}
	from := uint64(0)
	v, ok, err := db.Lookup(schema.RoomTip(rid))
	if err == nil && ok {
		var t tip
		if t, err = unmarshalTip(v); err == nil && t.arrival > arrivals {
			err = fmt.Errorf("%w: room tip at arrival %d, after the last (%d)", ErrCorrupt, t.arrival, arrivals)
		}
		if err == nil {
			l.heads, l.vv, from = t.heads, t.vv, t.arrival
		}
	}
	if err != nil {
		r.m.log.Error("room tip unreadable; reading the room's heads and version vector from its events", "room", rid, "err", err)
		l.owesTip = true
	}
	heads, vv, legacy, lerr := r.loadLegacyTip()
	if lerr != nil {
		return loaded{}, lerr
	}
	l.legacy = legacy
	if !ok && err == nil && len(legacy) > 0 {
		// Written before tips: every event wrote these keys, so they hold
		// the state as of the last arrival.
		l.heads, l.vv, l.migrate = heads, vv, true
		return l, nil
	}
	if from == arrivals {
		return l, nil
	}
	var ids []ID
	seqsLost := false
	err = db.ScanFrom(schema.RoomArrivalPrefix(rid), schema.RoomArrival(rid, from+1), false, func(_, v []byte) bool {
		if len(v) != len(ID{}) {
			seqsLost = true // an arrival that names no event
			return true
		}
		ids = append(ids, ID(v))
		return true
	})
	if err != nil {
		return loaded{}, err
	}
	l.owesTip = l.owesTip || int64(len(ids)) >= tipEvery.Load()
	for _, id := range ids {
		sv, ok, err := db.Lookup(schema.RoomEvent(rid, id[:]))
		if err != nil || !ok {
			l.damaged = append(l.damaged, id)
			continue
		}
		depth, wire, err := checkStored(id, sv)
		var e *Event
		if err == nil {
			e, err = decodeStored(wire)
		}
		if err != nil {
			l.damaged = append(l.damaged, id)
			// Its depth, if the order index agrees with what is left of
			// the value.
			if d, _, serr := splitStored(sv); serr == nil {
				if _, ok, _ := db.Lookup(schema.RoomOrder(rid, d, id[:])); ok {
					l.heads[id] = d
				}
			}
			continue
		}
		replayTip(l.heads, l.vv, id, e, depth)
	}
	if len(l.damaged) > 0 || seqsLost {
		if l.vv, err = r.seqsFromIndex(); err != nil {
			return loaded{}, err
		}
	}
	return l, nil
}

// seqsFromIndex reads the version vector from the sequence index: each
// author's highest seq there (every event but a fork has its entry,
// written with it).
func (r *room) seqsFromIndex() (map[peer.ID]uint64, error) {
	rid := string(r.id)
	vv := make(map[peer.ID]uint64)
	ap := schema.RoomAuthorsPrefix(rid)
	var ferr error
	err := r.m.cfg.Store.ScanFrom(ap, nil, false, func(k, _ []byte) bool {
		p, rest, ok := peerFromKey(k[len(ap):])
		if !ok || len(rest) != 8 {
			ferr = fmt.Errorf("rooms: bad sequence key in %s", rid)
			return false
		}
		vv[p] = max(vv[p], be8(rest))
		return true
	})
	if err == nil {
		err = ferr
	}
	return vv, err
}

// dropLegacy deletes the head and seq keys of a store written before tips
// once a tip holds their state, a few hundred a transaction. What fails is
// left for the next load.
func (r *room) dropLegacy(dels []schema.Op) {
	const chunk = 512
	for k := 0; k < len(dels); k += chunk {
		if err := r.m.cfg.Store.Apply(dels[k:min(k+chunk, len(dels))], false); err != nil {
			r.m.log.Warn("old head and seq keys not deleted; the next load tries again", "room", string(r.id), "err", err)
			return
		}
	}
	r.m.log.Info("room heads and version vector now kept as a tip", "room", string(r.id), "keys_removed", len(dels))
}

// replayTip does to heads and vv what storing event id did (room.store):
// its parents are no longer heads, it is one, and its author's seq moves
// on unless it is a fork (a seq the author used before, at or below it).
func replayTip(heads map[ID]uint64, vv map[peer.ID]uint64, id ID, e *Event, depth uint64) {
	for _, p := range e.Parents {
		delete(heads, p)
	}
	heads[id] = depth
	if e.Seq > vv[e.Author] {
		vv[e.Author] = e.Seq
	}
}

// loadLegacyTip reads the heads and version vector a store written before
// tips keeps as keys, and returns the deletes that take them out.
func (r *room) loadLegacyTip() (heads map[ID]uint64, vv map[peer.ID]uint64, dels []schema.Op, err error) {
	db, rid := r.m.cfg.Store, string(r.id)
	heads, vv = make(map[ID]uint64), make(map[peer.ID]uint64)
	var ferr error
	vp := schema.RoomVVPrefix(rid)
	err = db.ScanFrom(vp, nil, false, func(k, v []byte) bool {
		p, _, ok := peerFromKey(k[len(vp):])
		if !ok {
			ferr = fmt.Errorf("rooms: bad version vector key in %s", rid)
			return false
		}
		vv[p] = be8(v)
		dels = append(dels, schema.Op{Key: append([]byte(nil), k...), Delete: true})
		return true
	})
	if err == nil && ferr == nil {
		hp := schema.RoomHeadPrefix(rid)
		err = db.ScanFrom(hp, nil, false, func(k, v []byte) bool {
			if len(k) != len(hp)+len(ID{}) {
				ferr = fmt.Errorf("rooms: bad head key in %s", rid)
				return false
			}
			heads[ID(k[len(hp):])] = be8(v)
			dels = append(dels, schema.Op{Key: append([]byte(nil), k...), Delete: true})
			return true
		})
	}
	if err == nil {
		err = ferr
	}
	return heads, vv, dels, err
}
