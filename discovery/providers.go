package discovery

import (
	"context"
	"strings"
	"sync"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-base32"
	"github.com/multiformats/go-multihash"
)

// Bounds of the provider records a node keeps for others (ProviderStore).
// A node stores, for each key it is close to, the peers that announce it;
// every record costs about 300 bytes, so the defaults hold the store under
// about 20 MiB whatever strangers send.
const (
	// DefaultMaxProviderRecords bounds the records kept in total.
	DefaultMaxProviderRecords = 1 << 16
	// DefaultMaxProviderRecordsPerPeer bounds the records one peer may
	// have here: more than the keys of a node's cards (a handle, an agent
	// name and up to 32 capabilities per agent) for dozens of agents.
	DefaultMaxProviderRecordsPerPeer = 1 << 10
	// DefaultMaxProviderPeers bounds the peers with records here.
	DefaultMaxProviderPeers = 1 << 12
	// MaxProviderAddrs is the most addresses of a provider a node keeps
	// from one announcement.
	MaxProviderAddrs = 8
)

// providersPrefix is kad-dht's datastore namespace of provider records
// (records.ProvidersKeyPrefix); each record's key is
// /providers/<base32 provider key>/<base32 peer ID> and its value the time
// it was written.
const providersPrefix = "/providers/"

// IsProviderKey reports whether key (a provider record key as it travels
// in the DHT: the multihash of a CID) has the form of ProviderKey's keys: a
// SHA2-256 multihash of 32 bytes. Provider records under any other key are
// not Parley's and are refused.
func IsProviderKey(key []byte) bool {
	if len(key) != 34 {
		return false
	}
	dm, err := multihash.Decode(key)
	return err == nil && dm.Code == multihash.SHA2_256 && dm.Length == 32
}

// ProviderStoreConfig bounds a ProviderStore. Zero values mean the
// defaults above. This node's own records are kept whatever the bounds and
// do not count against them.
type ProviderStoreConfig struct {
	// Self is this node: its own records are never refused.
	Self       peer.ID
	MaxRecords int
	MaxPerPeer int
	MaxPeers   int
}

// ProviderStore is the DHT's provider datastore (pass it with
// dht.ProviderDatastore): an in-memory store that keeps only records under
// Parley's provider key form (IsProviderKey), at most MaxPerPeer of each
// peer, from at most MaxPeers peers, MaxRecords in all. Records beyond the
// bounds are dropped when written (the DHT's provider manager buffers its
// writes, so dropping cannot be an error); Admit refuses them earlier,
// before the DHT handles an announcement. Records leave when the provider
// manager's garbage collection deletes them (they expire after the DHT's
// provide validity). It is safe for concurrent use.
type ProviderStore struct {
	cfg  ProviderStoreConfig
	self string // base32 of cfg.Self, as records name peers

	mu      sync.Mutex                   // protects the fields below
	keys    map[string]map[string][]byte // base32 key → base32 peer → value
	perPeer map[string]int               // base32 peer → records
	total   int
	dropped uint64 // writes dropped by Put
	refused uint64 // announcements refused by Admit
}

var _ ds.Batching = (*ProviderStore)(nil)

// NewProviderStore returns an empty store.
func NewProviderStore(cfg ProviderStoreConfig) *ProviderStore {
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = DefaultMaxProviderRecords
	}
	if cfg.MaxPerPeer <= 0 {
		cfg.MaxPerPeer = DefaultMaxProviderRecordsPerPeer
	}
	if cfg.MaxPeers <= 0 {
		cfg.MaxPeers = DefaultMaxProviderPeers
	}
	return &ProviderStore{
		cfg: cfg, self: base32.RawStdEncoding.EncodeToString([]byte(cfg.Self)),
		keys: make(map[string]map[string][]byte), perPeer: make(map[string]int),
	}
}

// Stats returns the records kept, the peers they belong to, and how many
// announcements were refused or writes dropped for being out of form or
// bounds.
func (s *ProviderStore) Stats() (records, peers int, refused uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total, len(s.perPeer), s.refused + s.dropped
}

// Admit reports whether a provider record of p under key (as in an
// ADD_PROVIDER message) would be kept: key has Parley's form and p is
// within its bounds (a record p already has is always admitted again).
func (s *ProviderStore) Admit(p peer.ID, key []byte) bool {
	ok := IsProviderKey(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		kb := base32.RawStdEncoding.EncodeToString(key)
		pb := base32.RawStdEncoding.EncodeToString([]byte(p))
		ok = s.fitsLocked(kb, pb, p)
	}
	if !ok {
		s.refused++
	}
	return ok
}

// fitsLocked reports whether the record (kb, pb) may be kept. This node's
// own records do not count against the bounds.
func (s *ProviderStore) fitsLocked(kb, pb string, p peer.ID) bool {
	if _, ok := s.keys[kb][pb]; ok || p == s.cfg.Self {
		return true
	}
	others, peers := s.total-s.perPeer[s.self], len(s.perPeer)
	if s.perPeer[s.self] > 0 {
		peers--
	}
	n := s.perPeer[pb]
	if n == 0 && peers >= s.cfg.MaxPeers {
		return false
	}
	return n < s.cfg.MaxPerPeer && others < s.cfg.MaxRecords
}

// parse splits a datastore key into its base32 provider key and peer. ok is
// false for a key that is not a provider record of Parley's form.
func parse(k ds.Key) (kb, pb string, p peer.ID, ok bool) {
	rest, found := strings.CutPrefix(k.String(), providersPrefix)
	if !found {
		return "", "", "", false
	}
	kb, pb, found = strings.Cut(rest, "/")
	if !found || strings.Contains(pb, "/") {
		return "", "", "", false
	}
	raw, err := base32.RawStdEncoding.DecodeString(kb)
	if err != nil || !IsProviderKey(raw) {
		return "", "", "", false
	}
	pr, err := base32.RawStdEncoding.DecodeString(pb)
	if err != nil {
		return "", "", "", false
	}
	if p, err = peer.IDFromBytes(pr); err != nil {
		return "", "", "", false
	}
	return kb, pb, p, true
}

// Put keeps a record if it has Parley's form and fits the bounds, and
// drops it otherwise.
func (s *ProviderStore) Put(_ context.Context, k ds.Key, v []byte) error {
	kb, pb, p, ok := parse(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok || !s.fitsLocked(kb, pb, p) {
		s.dropped++
		return nil
	}
	m := s.keys[kb]
	if m == nil {
		m = make(map[string][]byte)
		s.keys[kb] = m
	}
	if _, had := m[pb]; !had {
		s.perPeer[pb]++
		s.total++
	}
	m[pb] = append([]byte(nil), v...)
	return nil
}

// Delete removes a record; a missing one is no error.
func (s *ProviderStore) Delete(_ context.Context, k ds.Key) error {
	kb, pb, _, ok := parse(k)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.keys[kb]
	if _, had := m[pb]; !had {
		return nil
	}
	delete(m, pb)
	if len(m) == 0 {
		delete(s.keys, kb)
	}
	s.total--
	if s.perPeer[pb]--; s.perPeer[pb] <= 0 {
		delete(s.perPeer, pb)
	}
	return nil
}

// Get returns a record's value.
func (s *ProviderStore) Get(_ context.Context, k ds.Key) ([]byte, error) {
	kb, pb, _, ok := parse(k)
	if !ok {
		return nil, ds.ErrNotFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, had := s.keys[kb][pb]
	if !had {
		return nil, ds.ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

// Has reports whether a record exists.
func (s *ProviderStore) Has(ctx context.Context, k ds.Key) (bool, error) {
	_, err := s.Get(ctx, k)
	if err == ds.ErrNotFound {
		return false, nil
	}
	return err == nil, err
}

// GetSize returns the size of a record's value.
func (s *ProviderStore) GetSize(ctx context.Context, k ds.Key) (int, error) {
	v, err := s.Get(ctx, k)
	if err != nil {
		return -1, err
	}
	return len(v), nil
}

// Query answers the provider manager's two queries, the records of one
// key (prefix /providers/<key>) and every record (prefix /providers/),
// from a copy taken under the lock; filters, orders and limits apply as
// for any datastore.
func (s *ProviderStore) Query(_ context.Context, q dsq.Query) (dsq.Results, error) {
	prefix := ds.NewKey(q.Prefix).String()
	var entries []dsq.Entry
	add := func(kb string, m map[string][]byte) {
		for pb, v := range m {
			e := dsq.Entry{Key: providersPrefix + kb + "/" + pb, Size: len(v)}
			if !q.KeysOnly {
				e.Value = append([]byte(nil), v...)
			}
			entries = append(entries, e)
		}
	}
	s.mu.Lock()
	if kb, one := strings.CutPrefix(prefix, providersPrefix); one && kb != "" && !strings.Contains(kb, "/") {
		add(kb, s.keys[kb])
	} else {
		for kb, m := range s.keys {
			add(kb, m)
		}
	}
	s.mu.Unlock()
	return dsq.NaiveQueryApply(q, dsq.ResultsWithEntries(q, entries)), nil
}

// Batch returns a batch applied through Put and Delete on Commit.
func (s *ProviderStore) Batch(context.Context) (ds.Batch, error) { return ds.NewBasicBatch(s), nil }

// Sync does nothing: the store lives in memory.
func (s *ProviderStore) Sync(context.Context, ds.Key) error { return nil }

// Close does nothing.
func (s *ProviderStore) Close() error { return nil }
