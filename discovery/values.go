package discovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	recpb "github.com/libp2p/go-libp2p-record/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-base32"
	"google.golang.org/protobuf/proto"
)

// Bounds of the DHT value records (agent cards and public keys) a node
// keeps for others (ValueStore). A card is at most MaxCardWire (4 KiB), so
// the defaults hold the store under about 40 MiB.
const (
	// DefaultMaxValueRecords bounds the value records kept in total.
	DefaultMaxValueRecords = 1 << 13
	// DefaultMaxCardsPerPeer bounds the agent cards of one node kept here.
	DefaultMaxCardsPerPeer = 64
	// MaxValueRecordWire bounds one record as kept: its key, its value (a
	// card of at most MaxCardWire, or a public key) and the time it came.
	MaxValueRecordWire = MaxCardWire + 1<<10
)

// ErrStoreFull is returned by ValueStore.Put for a record over its bounds;
// the DHT refuses the PUT_VALUE that carried it.
var ErrStoreFull = errors.New("discovery: value store full")

// ValueStoreConfig bounds a ValueStore. Zero values mean the defaults.
// This node's own cards are kept whatever the bounds and do not count
// against them.
type ValueStoreConfig struct {
	// Self is this node: its own cards are never refused.
	Self       peer.ID
	MaxRecords int
	MaxPerPeer int // agent cards of one node
}

// ValueStore is the DHT's value datastore (pass it with
// dht.ValueDatastore): an in-memory store that keeps at most MaxPerPeer
// agent cards of each node and MaxRecords records in all. A record over
// the bounds fails with ErrStoreFull, so the DHT refuses it; a record that
// replaces one already kept always fits. Records leave when the DHT's
// value store deletes them (expired ones). It is safe for concurrent use.
type ValueStore struct {
	cfg ValueStoreConfig

	mu      sync.Mutex // protects the fields below
	vals    map[ds.Key][]byte
	perPeer map[peer.ID]int
	byOwner map[peer.ID][]ds.Key // each owner's records (but this node's), oldest put first
	refused uint64
	evicted uint64
}

var _ ds.Batching = (*ValueStore)(nil)

// NewValueStore returns an empty store.
func NewValueStore(cfg ValueStoreConfig) *ValueStore {
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = DefaultMaxValueRecords
	}
	if cfg.MaxPerPeer <= 0 {
		cfg.MaxPerPeer = DefaultMaxCardsPerPeer
	}
	return &ValueStore{cfg: cfg, vals: make(map[ds.Key][]byte), perPeer: make(map[peer.ID]int),
		byOwner: make(map[peer.ID][]ds.Key)}
}

// Stats returns the records kept and the writes refused.
func (s *ValueStore) Stats() (records int, refused uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.vals), s.refused
}

// cardOwner returns the node whose agent card a datastore key holds
// (kad-dht stores a record under /<namespace>/<base32 of the record key>).
func cardOwner(k ds.Key) (peer.ID, bool) {
	rest, ok := strings.CutPrefix(k.String(), "/"+Namespace+"/")
	if !ok {
		return "", false
	}
	raw, err := base32.RawStdEncoding.DecodeString(rest)
	if err != nil {
		return "", false
	}
	p, _, err := parseCardKey(string(raw))
	return p, err == nil
}

// recordOwner returns the node a datastore key's record is of: the node of
// an agent card, the node whose public key a /pk/ record holds, or "" for
// any other record.
func recordOwner(k ds.Key) peer.ID {
	if p, ok := cardOwner(k); ok {
		return p
	}
	rest, ok := strings.CutPrefix(k.String(), "/pk/")
	if !ok {
		return ""
	}
	raw, err := base32.RawStdEncoding.DecodeString(rest)
	if err != nil {
		return ""
	}
	id, ok := strings.CutPrefix(string(raw), "/pk/")
	if !ok {
		return ""
	}
	p, err := peer.IDFromBytes([]byte(id))
	if err != nil {
		return ""
	}
	return p
}

// makeRoomLocked makes room in a full store for a new record of owner:
// the oldest record of the owner that holds the most goes, if that owner
// would still hold at least as many as owner then does. Fresh keys cost
// nothing, so a store that kept whoever came first would be filled by a
// flood and refuse every later record until the flood's expired; this
// way a flooder keeps no more than anyone else. It reports whether room
// was made.
func (s *ValueStore) makeRoomLocked(owner peer.ID) bool {
	var most peer.ID
	n := -1
	for p, ks := range s.byOwner {
		if len(ks) > n {
			most, n = p, len(ks)
		}
	}
	if n-1 < len(s.byOwner[owner])+1 {
		return false
	}
	s.deleteLocked(s.byOwner[most][0])
	s.evicted++
	return true
}

// deleteLocked removes record k; s.mu is held.
func (s *ValueStore) deleteLocked(k ds.Key) {
	if _, had := s.vals[k]; !had {
		return
	}
	delete(s.vals, k)
	if owner, card := cardOwner(k); card {
		if s.perPeer[owner]--; s.perPeer[owner] <= 0 {
			delete(s.perPeer, owner)
		}
	}
	owner := recordOwner(k)
	if owner == s.cfg.Self {
		return
	}
	ks := s.byOwner[owner]
	for i, x := range ks {
		if x == k {
			ks = append(ks[:i:i], ks[i+1:]...)
			break
		}
	}
	if len(ks) == 0 {
		delete(s.byOwner, owner)
	} else {
		s.byOwner[owner] = ks
	}
}

// Put keeps a record if it replaces one, or fits the bounds. The record
// is kept as its key, value and receive time alone: kad-dht stores the
// record as it came, fields it does not know included, so a stranger's
// valid card or public key could carry up to a DHT message (4 MiB) of
// padding, and the bounds on the count of records bounded nothing.
func (s *ValueStore) Put(_ context.Context, k ds.Key, v []byte) error {
	v, err := cleanRecord(v)
	if err != nil {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		return err
	}
	_, card := cardOwner(k)
	owner := recordOwner(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, had := s.vals[k]
	if !had && owner != s.cfg.Self {
		switch {
		case card && s.perPeer[owner] >= s.cfg.MaxPerPeer:
			s.refused++
			return fmt.Errorf("%w: %d cards of %s", ErrStoreFull, s.cfg.MaxPerPeer, owner)
		case len(s.vals)-s.perPeer[s.cfg.Self] >= s.cfg.MaxRecords && !s.makeRoomLocked(owner): // this node's own cards aside
			s.refused++
			return fmt.Errorf("%w: %d records", ErrStoreFull, s.cfg.MaxRecords)
		}
	}
	if !had {
		if card {
			s.perPeer[owner]++
		}
		if owner != s.cfg.Self {
			s.byOwner[owner] = append(s.byOwner[owner], k)
		}
	}
	s.vals[k] = v
	return nil
}

// Evicted is how many records gave way to another node's in a full store.
func (s *ValueStore) Evicted() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evicted
}

// cleanRecord returns the record v encodes with its key, value and receive
// time alone, or an error when it is no record or over MaxValueRecordWire.
func cleanRecord(v []byte) ([]byte, error) {
	var rec recpb.Record
	if err := proto.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("%w: not a DHT record: %v", ErrStoreFull, err)
	}
	clean, err := proto.Marshal(&recpb.Record{Key: rec.GetKey(), Value: rec.GetValue(), TimeReceived: rec.GetTimeReceived()})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStoreFull, err)
	}
	if len(clean) > MaxValueRecordWire {
		return nil, fmt.Errorf("%w: a record of %d bytes (at most %d)", ErrStoreFull, len(clean), MaxValueRecordWire)
	}
	return clean, nil
}

// Delete removes a record; a missing one is no error.
func (s *ValueStore) Delete(_ context.Context, k ds.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(k)
	return nil
}

// Get returns a record's value.
func (s *ValueStore) Get(_ context.Context, k ds.Key) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vals[k]
	if !ok {
		return nil, ds.ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

// Has reports whether a record exists.
func (s *ValueStore) Has(_ context.Context, k ds.Key) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.vals[k]
	return ok, nil
}

// GetSize returns the size of a record's value.
func (s *ValueStore) GetSize(_ context.Context, k ds.Key) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vals[k]
	if !ok {
		return -1, ds.ErrNotFound
	}
	return len(v), nil
}

// Query answers from a copy taken under the lock.
func (s *ValueStore) Query(_ context.Context, q dsq.Query) (dsq.Results, error) {
	s.mu.Lock()
	entries := make([]dsq.Entry, 0, len(s.vals))
	for k, v := range s.vals {
		e := dsq.Entry{Key: k.String(), Size: len(v)}
		if !q.KeysOnly {
			e.Value = append([]byte(nil), v...)
		}
		entries = append(entries, e)
	}
	s.mu.Unlock()
	return dsq.NaiveQueryApply(q, dsq.ResultsWithEntries(q, entries)), nil
}

// Batch returns a batch applied through Put and Delete on Commit.
func (s *ValueStore) Batch(context.Context) (ds.Batch, error) { return ds.NewBasicBatch(s), nil }

// Sync does nothing: the store lives in memory.
func (s *ValueStore) Sync(context.Context, ds.Key) error { return nil }

// Close does nothing.
func (s *ValueStore) Close() error { return nil }
