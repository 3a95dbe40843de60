package board

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Store is what the board needs of the node's store (internal/store's
// DB): it keeps the refused claims it watches there, so that a restart
// does not forget them.
type Store interface {
	// ScanFrom calls fn for the keys with prefix from start (nil: the
	// first) in key order, until fn returns false.
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
	// Apply writes ops atomically.
	Apply(ops []schema.Op, durable bool) error
}

// watchRecord is a watch as stored (schema.BoardWatch), JSON.
type watchRecord struct {
	Project string   `json:"p"`
	Paths   []string `json:"ps"`
	Note    string   `json:"n"`
	TTL     int64    `json:"t"` // ms
	Was     Held     `json:"w"`
	Until   int64    `json:"u"` // unix ms
	Lost    bool     `json:"l,omitempty"`
}

// maxWatchPieces is the most pieces of a watch's record: a refused claim's
// record is at most MaxPaths paths of MaxPattern bytes, two notes and the
// claim in the way, some 40 KiB once escaped, 46 pieces.
const maxWatchPieces = 255

// encodeWatch returns the record of w in pieces of at most
// schema.BoardWatchPiece bytes, the first beginning with their count.
func encodeWatch(w *watch) ([][]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(0) // the count, set below
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(watchRecord{Project: w.project, Paths: w.paths, Note: w.note, TTL: w.ttl.Milliseconds(),
		Was: w.was, Until: w.until.UnixMilli(), Lost: w.lost})
	if err != nil {
		return nil, err
	}
	b := buf.Bytes()
	n := (len(b) + schema.BoardWatchPiece - 1) / schema.BoardWatchPiece
	if n > maxWatchPieces {
		return nil, fmt.Errorf("board: a watch of %d bytes", len(b))
	}
	b[0] = byte(n)
	out := make([][]byte, 0, n)
	for len(b) > 0 {
		k := min(len(b), schema.BoardWatchPiece)
		out = append(out, b[:k])
		b = b[k:]
	}
	return out, nil
}

// decodeWatch reads a watch from its pieces, in order.
func decodeWatch(pieces [][]byte) (*watch, error) {
	if len(pieces) == 0 || len(pieces[0]) == 0 || int(pieces[0][0]) != len(pieces) {
		return nil, fmt.Errorf("board: a watch of %d pieces, or its first missing", len(pieces))
	}
	var r watchRecord
	if err := json.Unmarshal(bytes.Join(append([][]byte{pieces[0][1:]}, pieces[1:]...), nil), &r); err != nil {
		return nil, fmt.Errorf("board: a damaged watch: %w", err)
	}
	if len(r.Paths) == 0 || r.Project == "" {
		return nil, fmt.Errorf("board: a watch of no paths")
	}
	r.Was.keys()
	return &watch{project: r.Project, paths: r.Paths, note: r.Note, ttl: time.Duration(r.TTL) * time.Millisecond,
		was: r.Was, until: time.UnixMilli(r.Until), lost: r.Lost, pieces: len(pieces)}, nil
}

// splitWatchKey reads a schema.BoardWatch key.
func splitWatchKey(k []byte) (agent identity.AgentName, seq uint64, i int, ok bool) {
	rest, ok := bytes.CutPrefix(k, schema.BoardWatchPrefix())
	if !ok || len(rest) < 1 || len(rest) != 1+int(rest[0])+8+1 {
		return "", 0, 0, false
	}
	n := int(rest[0])
	return identity.AgentName(rest[1 : 1+n]), binary.BigEndian.Uint64(rest[1+n : 1+n+8]), int(rest[len(rest)-1]), true
}

// loadWatches reads the watches the store keeps, as the node left them:
// those expired, damaged or past the bounds (the oldest first) are
// deleted, and the rest watched again. Told at the agent's next look at
// its notices once their paths are free, as the board folds again.
func (s *Service) loadWatches() error {
	if s.cfg.Store == nil {
		return nil
	}
	type group struct {
		agent   identity.AgentName
		seq     uint64
		keys    [][]byte
		pieces  [][]byte
		damaged bool
	}
	var groups []*group
	var bad [][]byte // keys of no watch
	err := s.cfg.Store.ScanFrom(schema.BoardWatchPrefix(), nil, false, func(k, v []byte) bool {
		agent, seq, i, ok := splitWatchKey(k)
		if !ok {
			bad = append(bad, bytes.Clone(k))
			return true
		}
		g := (*group)(nil)
		if n := len(groups); n > 0 && groups[n-1].agent == agent && groups[n-1].seq == seq {
			g = groups[n-1]
		} else {
			g = &group{agent: agent, seq: seq}
			groups = append(groups, g)
		}
		g.keys = append(g.keys, bytes.Clone(k))
		if i != len(g.pieces) {
			g.damaged = true // a piece missing
		}
		g.pieces = append(g.pieces, bytes.Clone(v))
		return true
	})
	if err != nil {
		return fmt.Errorf("board: read the watches: %w", err)
	}
	now := s.cfg.Now()
	var ops []schema.Op
	for _, k := range bad {
		ops = append(ops, schema.Op{Key: k, Delete: true})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range groups {
		w, err := decodeWatch(g.pieces)
		if err == nil && g.damaged {
			err = fmt.Errorf("board: a watch with a piece missing")
		}
		if err != nil || !now.Before(w.until) {
			if err != nil {
				s.log.Warn("board: a damaged watch dropped", "agent", g.agent, "err", err)
			}
			for _, k := range g.keys {
				ops = append(ops, schema.Op{Key: k, Delete: true})
			}
			continue
		}
		w.seq = g.seq
		s.watches[g.agent] = append(s.watches[g.agent], w)
		s.seq = max(s.seq, g.seq)
	}
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
// store, numbering it; none without a store. Callers hold s.mu.
func (s *Service) storeOps(agent identity.AgentName, w *watch) []schema.Op {
	if s.cfg.Store == nil || len(agent) > 255 {
		return nil
	}
	pieces, err := encodeWatch(w)
	if err != nil {
		s.log.Warn("board: a watch kept in memory only", "agent", agent, "err", err)
		return nil
	}
	s.seq++
	w.seq, w.pieces = s.seq, len(pieces)
	ops := make([]schema.Op, len(pieces))
	for i, p := range pieces {
		ops[i] = schema.Op{Key: schema.BoardWatch(string(agent), w.seq, i), Val: p}
	}
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
		for i := range w.pieces {
			ops = append(ops, schema.Op{Key: schema.BoardWatch(string(agent), w.seq, i), Delete: true})
		}
		w.pieces = 0
	}
	return ops
}

// applyWatches writes the watches' ops. A write that fails is logged:
// the watches in memory hold all the same, and a watch not deleted is
// deleted at a later start once it expired. Callers hold s.mu.
func (s *Service) applyWatches(ops []schema.Op) error {
	if s.cfg.Store == nil || len(ops) == 0 {
		return nil
	}
	if err := s.cfg.Store.Apply(ops, false); err != nil {
		s.log.Warn("board: write the watches", "err", err)
		return err
	}
	return nil
}

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
