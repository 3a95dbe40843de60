package discovery

import (
	"container/list"
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
// peer, from at most MaxPeers peers, MaxRecords in all.
//
// When it is full it makes room rather than refuse, so that whoever came
// first cannot keep everyone else out: a new peer takes the place of the
// peer that holds the fewest records (the one heard from longest ago among
// them; all of its records go), and a record that finds every record taken
// takes the oldest record of the peer that holds the most, if that peer
// would still hold at least as many as the newcomer. A peer at MaxPerPeer,
// or one that already holds its fair share of a full store, is refused.
// Records refused are dropped when written (the DHT's provider manager
// buffers its writes, so dropping cannot be an error); Admit refuses them
// earlier, before the DHT handles an announcement. Records leave when the
// provider manager's garbage collection deletes them (they expire after
// the DHT's provide validity) or when they give way as above. It is safe
// for concurrent use.
type ProviderStore struct {
	cfg  ProviderStoreConfig
	self string // base32 of cfg.Self, as records name peers

	mu      sync.Mutex                     // protects the fields below
	keys    map[string]map[string]*provRec // base32 key → base32 peer → record
	peers   map[string]*provPeer           // base32 peer → its records
	byCount []map[string]*provPeer         // [n]: the peers other than this node with n records
	total   int                            // records, this node's among them
	clock   uint64                         // write counter: orders records by age
	dropped uint64                         // writes dropped by Put
	refused uint64                         // announcements refused by Admit
	evicted uint64                         // records that gave way to others
}

// provRec is one record.
type provRec struct {
	kb    string
	v     []byte
	at    uint64        // clock when last written
	entry *list.Element // in its peer's recs
}

// provPeer is one peer's records, the least recently written first.
type provPeer struct {
	pb   string
	recs *list.List // of *provRec
}

func (pp *provPeer) n() int { return pp.recs.Len() }

// newest is the clock of pp's last write.
func (pp *provPeer) newest() uint64 { return pp.recs.Back().Value.(*provRec).at }

// oldest is pp's least recently written record.
func (pp *provPeer) oldest() *provRec { return pp.recs.Front().Value.(*provRec) }

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
	s := &ProviderStore{
		cfg: cfg, self: base32.RawStdEncoding.EncodeToString([]byte(cfg.Self)),
		keys: make(map[string]map[string]*provRec), peers: make(map[string]*provPeer),
		byCount: make([]map[string]*provPeer, cfg.MaxPerPeer+1),
	}
	for i := range s.byCount {
		s.byCount[i] = make(map[string]*provPeer)
	}
	return s
}

// Stats returns the records kept, the peers they belong to, and how many
// announcements were refused or writes dropped for being out of form or
// bounds.
func (s *ProviderStore) Stats() (records, peers int, refused uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total, len(s.peers), s.refused + s.dropped
}

// Evicted returns how many records gave way to others' in a full store.
func (s *ProviderStore) Evicted() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evicted
}

// Admit reports whether a provider record of p under key (as in an
// ADD_PROVIDER message) would be kept: key has Parley's form and p is
// within its bounds (a record p already has is always admitted again),
// room made as the store's documentation says. It changes nothing: the
// room is made when the record is written.
func (s *ProviderStore) Admit(p peer.ID, key []byte) bool {
	ok := IsProviderKey(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		kb := base32.RawStdEncoding.EncodeToString(key)
		pb := base32.RawStdEncoding.EncodeToString([]byte(p))
		ok = s.makeRoomLocked(kb, pb, p, false)
	}
	if !ok {
		s.refused++
	}
	return ok
}

// makeRoomLocked reports whether the record (kb, pb) may be kept, and, if
// evict, makes room for it. This node's own records do not count against
// the bounds and never give way.
func (s *ProviderStore) makeRoomLocked(kb, pb string, p peer.ID, evict bool) bool {
	if _, ok := s.keys[kb][pb]; ok || p == s.cfg.Self {
		return true
	}
	n := 0
	if pp := s.peers[pb]; pp != nil {
		n = pp.n()
	}
	if n >= s.cfg.MaxPerPeer {
		return false
	}
	others, peers := s.total, len(s.peers)
	if own := s.peers[s.self]; own != nil {
		others -= own.n()
		peers--
	}
	if n == 0 && peers >= s.cfg.MaxPeers {
		// A new peer takes the place of the one with the fewest records.
		v := s.fewestLocked()
		if v == nil {
			return false
		}
		if !evict {
			return true // its records free a record too
		}
		for v.recs.Len() > 0 {
			s.removeLocked(v.oldest(), v)
			s.evicted++
		}
		return true
	}
	if others < s.cfg.MaxRecords {
		return true
	}
	// Every record is taken: the peer that holds the most gives up its
	// oldest, if it would still hold at least as many as p.
	v := s.mostLocked()
	if v == nil || v.n() <= n+1 {
		return false
	}
	if evict {
		s.removeLocked(v.oldest(), v)
		s.evicted++
	}
	return true
}

// fewestLocked returns the peer other than this node that holds the
// fewest records, of those the one written to longest ago; nil if none.
func (s *ProviderStore) fewestLocked() *provPeer {
	for _, b := range s.byCount[1:] {
		var v *provPeer
		for _, pp := range b {
			if v == nil || pp.newest() < v.newest() {
				v = pp
			}
		}
		if v != nil {
			return v
		}
	}
	return nil
}

// mostLocked returns the peer other than this node that holds the most
// records, of those the one whose oldest record is oldest; nil if none.
func (s *ProviderStore) mostLocked() *provPeer {
	for i := len(s.byCount) - 1; i > 0; i-- {
		var v *provPeer
		for _, pp := range s.byCount[i] {
			if v == nil || pp.oldest().at < v.oldest().at {
				v = pp
			}
		}
		if v != nil {
			return v
		}
	}
	return nil
}

// recountLocked moves pp from the bucket of its old count to its present
// one (this node is in none).
func (s *ProviderStore) recountLocked(pp *provPeer, old int) {
	if pp.pb == s.self {
		return
	}
	delete(s.byCount[old], pp.pb)
	if n := pp.n(); n > 0 {
		s.byCount[n][pp.pb] = pp
	}
}

// removeLocked removes record r of peer pp.
func (s *ProviderStore) removeLocked(r *provRec, pp *provPeer) {
	m := s.keys[r.kb]
	delete(m, pp.pb)
	if len(m) == 0 {
		delete(s.keys, r.kb)
	}
	s.total--
	old := pp.n()
	pp.recs.Remove(r.entry)
	s.recountLocked(pp, old)
	if pp.n() == 0 {
		delete(s.peers, pp.pb)
	}
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

// Put keeps a record if it has Parley's form and fits the bounds, making
// room as the store's documentation says, and drops it otherwise.
func (s *ProviderStore) Put(_ context.Context, k ds.Key, v []byte) error {
	kb, pb, p, ok := parse(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok || !s.makeRoomLocked(kb, pb, p, true) {
		s.dropped++
		return nil
	}
	s.clock++
	v = append([]byte(nil), v...)
	m := s.keys[kb]
	if r := m[pb]; r != nil {
		r.v, r.at = v, s.clock
		s.peers[pb].recs.MoveToBack(r.entry)
		return nil
	}
	if m == nil {
		m = make(map[string]*provRec)
		s.keys[kb] = m
	}
	pp := s.peers[pb]
	if pp == nil {
		pp = &provPeer{pb: pb, recs: list.New()}
		s.peers[pb] = pp
	}
	r := &provRec{kb: kb, v: v, at: s.clock}
	r.entry = pp.recs.PushBack(r)
	m[pb] = r
	s.total++
	s.recountLocked(pp, pp.n()-1)
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
	if r := s.keys[kb][pb]; r != nil {
		s.removeLocked(r, s.peers[pb])
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
	r := s.keys[kb][pb]
	if r == nil {
		return nil, ds.ErrNotFound
	}
	return append([]byte(nil), r.v...), nil
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
	add := func(kb string, m map[string]*provRec) {
		for pb, r := range m {
			e := dsq.Entry{Key: providersPrefix + kb + "/" + pb, Size: len(r.v)}
			if !q.KeysOnly {
				e.Value = append([]byte(nil), r.v...)
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
