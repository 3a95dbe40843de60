package board

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/canon"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Store is what the board needs of the node's store (internal/store's
// DB): it keeps the refused claims it watches and the notices it told
// there, so that a restart does not forget them.
type Store interface {
	// ScanFrom calls fn for the keys with prefix from start (nil: the
	// first) in key order, until fn returns false.
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
	// Apply writes ops atomically.
	Apply(ops []schema.Op, durable bool) error
}

// watchRecord is a watch as stored (schema.BoardWatch): a CBOR map, kept
// in pieces under the store's value threshold (schema.SetPieces).
type watchRecord struct {
	Project string     `cbor:"1,keyasint,omitempty"`
	Paths   []string   `cbor:"2,keyasint,omitempty"`
	Note    string     `cbor:"3,keyasint,omitempty"`
	TTL     int64      `cbor:"4,keyasint,omitempty"` // ms
	Was     heldRecord `cbor:"5,keyasint"`
	Until   int64      `cbor:"6,keyasint,omitempty"` // unix ms
	Lost    bool       `cbor:"7,keyasint,omitempty"`
}

// heldRecord is a watch's Held (the claim in the way) as stored.
type heldRecord struct {
	Path    string `cbor:"1,keyasint,omitempty"`
	Holder  string `cbor:"2,keyasint,omitempty"`
	Note    string `cbor:"3,keyasint,omitempty"`
	Since   int64  `cbor:"4,keyasint,omitempty"`
	Expires int64  `cbor:"5,keyasint,omitempty"`
	Event   string `cbor:"6,keyasint,omitempty"`
	Room    string `cbor:"7,keyasint,omitempty"`
}

// recordDec reads the board's stored records (watches, notices told): no
// tags, no indefinite lengths, valid UTF-8, at most MaxPaths paths; fields
// a later Parley added are skipped.
var recordDec = func() cbor.DecMode {
	m, err := cbor.DecOptions{
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
		MaxNestedLevels:  4,
		MaxArrayElements: MaxPaths,
		MaxMapPairs:      16,
		UTF8:             cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		panic("board: cbor options: " + err.Error()) // constant options: a programming error
	}
	return m
}()

// encodeWatch returns the record of w.
func encodeWatch(w *watch) ([]byte, error) {
	h := w.was
	return canon.Enc.Marshal(watchRecord{Project: w.project, Paths: w.paths, Note: w.note, TTL: w.ttl.Milliseconds(),
		Was:   heldRecord{Path: h.Path, Holder: h.Holder, Note: h.Note, Since: h.Since, Expires: h.Expires, Event: h.Event, Room: h.Room},
		Until: w.until.UnixMilli(), Lost: w.lost})
}

// decodeWatch reads a watch from its record.
func decodeWatch(b []byte) (*watch, error) {
	var r watchRecord
	if err := recordDec.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("board: a damaged watch: %w", err)
	}
	if len(r.Paths) == 0 || r.Project == "" {
		return nil, fmt.Errorf("board: a watch of no paths")
	}
	// Checked as a claim's are: a damaged or hand-made record must not
	// bring in paths the overlap checks were never bounded for.
	paths, err := CheckPaths(r.Paths, true)
	if err != nil {
		return nil, fmt.Errorf("board: a watch of paths no claim has: %w", err)
	}
	r.Paths = paths
	if r.TTL < 0 || r.TTL > MaxTTL.Milliseconds() {
		return nil, fmt.Errorf("board: a watch of ttl %d ms", r.TTL)
	}
	h := Held{Path: r.Was.Path, Holder: r.Was.Holder, Note: r.Was.Note, Since: r.Was.Since, Expires: r.Was.Expires, Event: r.Was.Event, Room: r.Was.Room}
	h.keys()
	return &watch{project: r.Project, paths: r.Paths, note: r.Note, ttl: time.Duration(r.TTL) * time.Millisecond,
		was: h, until: time.UnixMilli(r.Until), lost: r.Lost, stored: true}, nil
}

// splitWatchKey reads a schema.BoardWatch key (a record's, not a piece's).
func splitWatchKey(k []byte) (agent identity.AgentName, seq uint64, ok bool) {
	rest, ok := bytes.CutPrefix(k, schema.BoardWatchPrefix())
	if !ok || len(rest) < 1 || len(rest) != 1+int(rest[0]) || rest[0] <= 8 {
		return "", 0, false
	}
	return identity.AgentName(rest[1 : len(rest)-8]), binary.BigEndian.Uint64(rest[len(rest)-8:]), true
}

// readRecords reads the board's records under prefix (what they are, for
// the log): each whole (schema.Joiner; those damaged are dropped with a
// warning), and every key scanned.
func (s *Service) readRecords(what string, prefix []byte) ([]schema.Joined, [][]byte, error) {
	j := schema.NewJoiner(prefix)
	var keys [][]byte
	err := s.cfg.Store.ScanFrom(prefix, nil, false, func(k, v []byte) bool {
		j.Add(k, v)
		keys = append(keys, bytes.Clone(k))
		return true
	})
	if err != nil {
		return nil, nil, fmt.Errorf("board: read the %s: %w", what, err)
	}
	records, damaged := j.Done()
	if len(damaged) > 0 {
		s.log.Warn("board: damaged "+what+" dropped", "err", errors.Join(damaged...))
	}
	return records, keys, nil
}

// unreadOps returns the ops that delete, of the keys scanned under prefix,
// the records not kept (by key) with all their pieces, and the keys of no
// record.
func unreadOps(prefix []byte, keys [][]byte, kept map[string]bool) []schema.Op {
	var ops []schema.Op
	gone := map[string]bool{}
	for _, k := range keys {
		rk := recordKey(prefix, k)
		switch {
		case rk == nil:
			ops = append(ops, schema.Op{Key: k, Delete: true})
		case !kept[string(rk)] && !gone[string(rk)]:
			gone[string(rk)] = true
			ops = append(ops, schema.DeletePieces(rk)...)
		}
	}
	return ops
}

// recordKey returns the key of the record under prefix (keys prefix +
// schema.PeerBytes, written with schema.SetPieces) a scanned key belongs
// to (itself, or the record it is a piece of), or nil for a key of none.
func recordKey(prefix, k []byte) []byte {
	rest, ok := bytes.CutPrefix(k, prefix)
	switch {
	case !ok || len(rest) < 1:
		return nil
	case len(rest) == 1+int(rest[0]):
		return k
	case len(rest) == 2+int(rest[0]):
		return k[:len(k)-1]
	}
	return nil
}

// loadWatches reads the watches the store keeps, as the node left them:
// those expired, damaged or past the bounds (the oldest first) are
// deleted, and the rest watched again. Told at the agent's next look at
// its notices once their paths are free, as the board folds again.
func (s *Service) loadWatches() error {
	if s.cfg.Store == nil {
		return nil
	}
	records, keys, err := s.readRecords("watches", schema.BoardWatchPrefix())
	if err != nil {
		return err
	}
	now := s.cfg.Now()
	kept := map[string]bool{} // the keys of the records watched again
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range records { // in key order: each agent's by seq
		agent, seq, ok := splitWatchKey(r.Key)
		w, err := decodeWatch(r.Val)
		if err == nil && !ok {
			err = fmt.Errorf("board: a watch key of no agent")
		}
		if err != nil {
			s.log.Warn("board: a damaged watch dropped", "key", r.Key, "err", err)
			continue
		}
		if !now.Before(w.until) {
			continue
		}
		w.seq = seq
		kept[string(r.Key)] = true
		s.watches[agent] = append(s.watches[agent], w)
		s.seq = max(s.seq, seq)
	}
	// Delete what is not watched again: records damaged, expired or of
	// no agent with all their pieces, and keys of no record.
	ops := unreadOps(schema.BoardWatchPrefix(), keys, kept)
	// The bounds, as watchLocked keeps them.
	for a, ws := range s.watches {
		if d := len(ws) - maxWatchesPerAgent; d > 0 {
			ops = append(ops, s.unstoreOps(a, ws[:d]...)...)
			s.watches[a] = slices.Delete(ws, 0, d)
		}
	}
	ops = append(ops, s.overTotalLocked()...)
	return s.applyWatches(ops)
}

// storeOps returns the ops that keep w (new, or written again) in the
// store, numbering it; none without a store. A record over
// schema.MaxPieces pieces (a claim of many long paths: up to some 35 KB)
// is written whole, into the value log, which is never collected: this
// is acceptable, as only this node's own agents make watches, at most
// maxWatchesPerAgent per agent and maxWatches per node, each deleted when
// told or after watchTTL. Callers hold s.mu.
func (s *Service) storeOps(agent identity.AgentName, w *watch) []schema.Op {
	if s.cfg.Store == nil || len(agent) > 255-8 {
		return nil
	}
	b, err := encodeWatch(w)
	var ops []schema.Op
	if err == nil {
		ops, err = schema.SetPieces(schema.BoardWatch(string(agent), s.seq+1), b)
	}
	if err != nil {
		s.log.Warn("board: a watch kept in memory only", "agent", agent, "err", err)
		return nil
	}
	s.seq++
	w.seq, w.stored = s.seq, true
	return ops
}

// unstoreOps returns the ops that delete agent's watches ws from the
// store. Callers hold s.mu.
func (s *Service) unstoreOps(agent identity.AgentName, ws ...*watch) []schema.Op {
	if s.cfg.Store == nil {
		return nil
	}
	var ops []schema.Op
	for _, w := range ws {
		if w.stored {
			ops = append(ops, schema.DeletePieces(schema.BoardWatch(string(agent), w.seq))...)
		}
		w.stored = false
	}
	return ops
}

// applyWatches writes the watches' ops. A write that fails is logged:
// the watches in memory hold all the same, and a watch not deleted is
// deleted at a later start once it expired. Callers hold s.mu.
func (s *Service) applyWatches(ops []schema.Op) error { return s.applyStore("watches", ops) }

// applyStore writes ops of the board's records (what: which, for the
// log), not durably, in writes of at most storeChunkOps ops and
// storeChunkBytes bytes: Badger takes at most 15 % of a memtable in one
// (some 6,000 keys, or 629 KB, internal/store), and deleting a few
// thousand records of 16 keys each (schema.DeletePieces) is past that. A
// record cut between two writes is read as damaged and dropped, should
// the node stop in between. A write that fails is logged; the ops after
// it are not written. Callers hold s.mu.
func (s *Service) applyStore(what string, ops []schema.Op) error {
	if s.cfg.Store == nil {
		return nil
	}
	for len(ops) > 0 {
		n, size := 0, 0
		for n < len(ops) && n < storeChunkOps && size < storeChunkBytes {
			size += len(ops[n].Key) + len(ops[n].Val) + 32
			n++
		}
		if err := s.cfg.Store.Apply(ops[:n], false); err != nil {
			s.log.Warn("board: write the "+what, "err", err)
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// storeChunkOps and storeChunkBytes bound one write of applyStore.
const (
	storeChunkOps   = 2048
	storeChunkBytes = 256 << 10
)

// overTotalLocked drops the oldest watches of the service past
// maxWatches, and returns the ops that delete them from the store.
// Callers hold s.mu.
func (s *Service) overTotalLocked() []schema.Op {
	total := 0
	for _, ws := range s.watches {
		total += len(ws)
	}
	var ops []schema.Op
	for ; total > maxWatches; total-- {
		// Drop the oldest watch of the service: each agent's are in the
		// order they were made, so it is the first of one of them.
		var oldest identity.AgentName
		var at time.Time
		found := false
		for a, ws := range s.watches {
			if !found || ws[0].until.Before(at) {
				oldest, at, found = a, ws[0].until, true
			}
		}
		ops = append(ops, s.unstoreOps(oldest, s.watches[oldest][0])...)
		if ws := s.watches[oldest][1:]; len(ws) == 0 {
			delete(s.watches, oldest)
		} else {
			s.watches[oldest] = ws
		}
	}
	return ops
}

// Forget drops every watch of agent (an agent killed: it is told nothing
// more).
func (s *Service) Forget(agent identity.AgentName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := s.unstoreOps(agent, s.watches[agent]...)
	delete(s.watches, agent)
	_ = s.applyWatches(ops)
}
