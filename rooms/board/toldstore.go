package board

import (
	"bytes"
	"fmt"
	"time"

	"github.com/parley-mesh/parley/internal/canon"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// maxTold bounds the notices the service remembers it told (s.told, and
// their records in the store). Each is kept until its claim expires, at
// most MaxTTL (plus MaxAhead) after it was told. The claim_expiring and
// claim_lost notices are about this node's own claims, one per held path
// at most: the node's claims of MaxTTL weigh at most MaxNodeWeight, 256
// bytes and more a path, some 16,000 paths. claim_contested notices are
// about other nodes' claims that lost to this node's, bounded by theirs.
// Past the bound, the notice whose claim expires first is forgotten (told
// again at worst, while its claim still lives); a record is some 100 to
// 600 bytes, so the store holds at most a few MB of them. A variable for
// the tests only.
var maxTold = 16384

// maxToldID is the longest notice ID read back: an ID names an event and
// at most one path (MaxPattern bytes).
const maxToldID = 1024

// toldRecord is a notice told as stored (schema.BoardTold): its ID and
// the expiry of its claim.
type toldRecord struct {
	ID      string `cbor:"1,keyasint,omitempty"`
	Expires int64  `cbor:"2,keyasint,omitempty"` // unix ms
}

func encodeTold(id string, expires int64) ([]byte, error) {
	return canon.Enc.Marshal(toldRecord{ID: id, Expires: expires})
}

// decodeTold reads a notice told from its record.
func decodeTold(b []byte) (id string, expires int64, err error) {
	var r toldRecord
	if err := recordDec.Unmarshal(b, &r); err != nil {
		return "", 0, fmt.Errorf("board: a damaged notice told: %w", err)
	}
	if r.ID == "" || len(r.ID) > maxToldID {
		return "", 0, fmt.Errorf("board: a notice told of an ID of %d bytes", len(r.ID))
	}
	return r.ID, r.Expires, nil
}

// tellLocked remembers that the notice id, about a claim that expires at
// expires (unix ms), was told, in memory and in the store, and returns
// the ops that store it (and delete what the bound drops). Callers hold
// s.mu.
func (s *Service) tellLocked(id string, expires int64) []schema.Op {
	s.told[id] = expires
	var ops []schema.Op
	if s.cfg.Store != nil {
		b, err := encodeTold(id, expires)
		if err == nil {
			ops, err = schema.SetPieces(schema.BoardTold(id), b)
		}
		if err != nil {
			s.log.Warn("board: a notice told kept in memory only", "id", id, "err", err)
			ops = nil
		}
	}
	return append(ops, s.overToldLocked()...)
}

// overToldLocked forgets the notices told past maxTold, those whose
// claims expire first, and returns the ops that delete them from the
// store. Callers hold s.mu.
func (s *Service) overToldLocked() []schema.Op {
	var ops []schema.Op
	for len(s.told) > maxTold {
		first, at := "", int64(0)
		for id, e := range s.told {
			if first == "" || e < at || e == at && id < first {
				first, at = id, e
			}
		}
		delete(s.told, first)
		ops = append(ops, s.untellOps(first)...)
	}
	return ops
}

// pruneToldLocked forgets the notices told whose claims expired by ms,
// and returns the ops that delete them from the store. Callers hold s.mu.
func (s *Service) pruneToldLocked(ms int64) []schema.Op {
	var ops []schema.Op
	for id, e := range s.told {
		if e <= ms {
			delete(s.told, id)
			ops = append(ops, s.untellOps(id)...)
		}
	}
	return ops
}

func (s *Service) untellOps(id string) []schema.Op {
	if s.cfg.Store == nil {
		return nil
	}
	return schema.DeletePieces(schema.BoardTold(id))
}

// loadTold reads the notices told that the store keeps: those expired,
// damaged, under a key not theirs, dated past any claim's expiry, or
// past maxTold are deleted, and the rest are not told again.
func (s *Service) loadTold() error {
	if s.cfg.Store == nil {
		return nil
	}
	prefix := schema.BoardToldPrefix()
	records, keys, err := s.readRecords("notices told", prefix)
	if err != nil {
		return err
	}
	ms := s.cfg.Now().UnixMilli()
	latest := ms + (MaxTTL + MaxAhead).Milliseconds() // no claim expires later
	kept := map[string]bool{}                         // the keys of the records read
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range records {
		id, expires, err := decodeTold(r.Val)
		if err == nil && !bytes.Equal(r.Key, schema.BoardTold(id)) {
			err = fmt.Errorf("board: a notice told under a key not its own")
		}
		if err == nil && expires > latest {
			err = fmt.Errorf("board: a notice told of a claim expiring in %v", time.Duration(expires-ms)*time.Millisecond)
		}
		if err != nil {
			s.log.Warn("board: a damaged notice told dropped", "key", r.Key, "err", err)
			continue
		}
		if expires <= ms {
			continue
		}
		kept[string(r.Key)] = true
		s.told[id] = expires
	}
	// Delete what is not read back: records damaged or expired with all
	// their pieces, and keys of no record (a piece's key is its record's
	// and one byte).
	ops := append(unreadOps(prefix, keys, kept), s.overToldLocked()...)
	return s.applyStore("notices told", ops)
}
