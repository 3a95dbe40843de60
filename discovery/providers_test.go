package discovery

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"testing"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p-kad-dht/records"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/peerstore/pstoremem"
	"github.com/multiformats/go-base32"
)

func newPeer(t testing.TB) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func pkey(t testing.TB, s string) []byte {
	t.Helper()
	k, err := ProviderKey(KindCap, s)
	if err != nil {
		t.Fatal(err)
	}
	return k.Hash()
}

func TestIsProviderKey(t *testing.T) {
	if !IsProviderKey(pkey(t, "go")) {
		t.Fatal("a ProviderKey is refused")
	}
	junk := make([]byte, 34)
	for _, k := range [][]byte{nil, {}, junk, make([]byte, 40), append([]byte{0x00, 0x20}, make([]byte, 32)...), append([]byte{0x12, 0x10}, make([]byte, 16)...)} {
		if IsProviderKey(k) {
			t.Fatalf("key %x taken", k)
		}
	}
}

// The store runs under kad-dht's own provider manager: records of Parley's
// form are kept and served, others are dropped, and one peer keeps at most
// MaxPerPeer, from at most MaxPeers peers, MaxRecords in all (the manager
// buffers its writes, so the bounds hold when they reach the store); a
// new peer finds room when every peer place is taken (the peer with the
// fewest records, written to longest ago, gives way), and a delete
// (expiry) frees the room again.
func TestProviderStoreUnderProviderManager(t *testing.T) {
	ctx := context.Background()
	self := newPeer(t)
	st := NewProviderStore(ProviderStoreConfig{Self: self, MaxRecords: 10, MaxPerPeer: 4, MaxPeers: 3})
	ps, err := pstoremem.NewPeerstore()
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	pm, err := records.NewProviderManager(self, ps, st)
	if err != nil {
		t.Fatal(err)
	}

	a, b, c, d := newPeer(t), newPeer(t), newPeer(t), newPeer(t)
	add := func(pm *records.ProviderManager, p peer.ID, key []byte) {
		if err := pm.AddProvider(ctx, key, peer.AddrInfo{ID: p}); err != nil {
			t.Fatal(err)
		}
	}
	shared := pkey(t, "shared")
	for _, p := range []peer.ID{a, b, c} {
		add(pm, p, shared)
	}
	if err := pm.Close(); err != nil { // flushes the buffered writes
		t.Fatal(err)
	}
	checkProviderStore(t, st)
	pm, err = records.NewProviderManager(self, ps, st)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		add(pm, a, pkey(t, fmt.Sprintf("a%d", i)))
	}
	add(pm, a, make([]byte, 40))
	// The manager writes what it buffered in no set order: a's records are
	// written before d comes, so that d takes the place of b or c, not of
	// a while a holds one record.
	if err := pm.Close(); err != nil {
		t.Fatal(err)
	}
	pm, err = records.NewProviderManager(self, ps, st)
	if err != nil {
		t.Fatal(err)
	}
	add(pm, d, pkey(t, "d0"))
	for i := range 20 {
		add(pm, self, pkey(t, fmt.Sprintf("self%d", i)))
	}
	if err := pm.Close(); err != nil {
		t.Fatal(err)
	}
	checkProviderStore(t, st)
	kept, peers, dropped := st.Stats()
	// a: shared and 3 of its 6; b or c: 1 (the other gave way to d); d: 1;
	// this node: all.
	if kept != 4+1+1+20 || peers != 4 || dropped != 3+1 || st.Evicted() != 1 {
		t.Fatalf("store holds %d records of %d peers, dropped %d, evicted %d", kept, peers, dropped, st.Evicted())
	}
	if st.Admit(a, pkey(t, "a9")) || st.Admit(b, make([]byte, 40)) {
		t.Fatal("Admit lets an announcement out of bounds through")
	}
	if !st.Admit(a, shared) || !st.Admit(self, pkey(t, "self99")) || !st.Admit(d, pkey(t, "d1")) || !st.Admit(newPeer(t), pkey(t, "e0")) {
		t.Fatal("Admit refuses a record already kept, this node's own, one within bounds or a new peer's")
	}

	// A fresh manager over the same store serves what it kept.
	pm, err = records.NewProviderManager(self, ps, st)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	provs, err := pm.GetProviders(ctx, shared)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]peer.ID, len(provs))
	for i, p := range provs {
		got[i] = p.ID
	}
	slices.Sort(got)
	if len(got) != 2 || !slices.Contains(got, a) || !(slices.Contains(got, b) || slices.Contains(got, c)) {
		t.Fatalf("providers of the shared key: %v, want a (%v) and one of b (%v), c (%v)", got, a, b, c)
	}
	// A deleted (expired) record frees its peer's room.
	k := ds.NewKey("/providers/" + base32.RawStdEncoding.EncodeToString(shared) + "/" + base32.RawStdEncoding.EncodeToString([]byte(a)))
	if ok, _ := st.Has(ctx, k); !ok {
		t.Fatal("record of the shared key missing")
	}
	if err := st.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	checkProviderStore(t, st)
	if !st.Admit(a, pkey(t, "a9")) {
		t.Fatal("no room after a delete")
	}
}

// putProvider writes p's record under key, as the provider manager does.
func putProvider(t testing.TB, st *ProviderStore, p peer.ID, key []byte) {
	t.Helper()
	k := ds.NewKey("/providers/" + base32.RawStdEncoding.EncodeToString(key) + "/" + base32.RawStdEncoding.EncodeToString([]byte(p)))
	if err := st.Put(context.Background(), k, []byte{1}); err != nil {
		t.Fatal(err)
	}
}

func hasProvider(t testing.TB, st *ProviderStore, p peer.ID, key []byte) bool {
	t.Helper()
	k := ds.NewKey("/providers/" + base32.RawStdEncoding.EncodeToString(key) + "/" + base32.RawStdEncoding.EncodeToString([]byte(p)))
	ok, err := st.Has(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// A full store makes room for a record by taking the oldest record of the
// peer that holds the most, as long as that peer keeps at least as many
// as the newcomer; a peer that holds its fair share already is refused.
func TestProviderStoreFullGivesWayToTheLeast(t *testing.T) {
	st := NewProviderStore(ProviderStoreConfig{Self: newPeer(t), MaxRecords: 8, MaxPerPeer: 8, MaxPeers: 4})
	flood, x := newPeer(t), newPeer(t)
	for i := range 8 {
		putProvider(t, st, flood, pkey(t, fmt.Sprint("f", i)))
	}
	checkProviderStore(t, st)
	for i := range 4 {
		if !st.Admit(x, pkey(t, fmt.Sprint("x", i))) {
			t.Fatalf("x's record %d refused in a store the flooder filled", i)
		}
		putProvider(t, st, x, pkey(t, fmt.Sprint("x", i)))
		checkProviderStore(t, st)
		if hasProvider(t, st, flood, pkey(t, fmt.Sprint("f", i))) || !hasProvider(t, st, flood, pkey(t, fmt.Sprint("f", i+1))) {
			t.Fatalf("x's record %d did not take the flooder's oldest", i)
		}
	}
	// 4 and 4: x holds its share and gives way to no one, nor takes more.
	if st.Admit(x, pkey(t, "x4")) || st.Admit(flood, pkey(t, "f9")) {
		t.Fatal("a peer that holds its share of a full store takes another's record")
	}
	putProvider(t, st, x, pkey(t, "x4"))
	if !hasProvider(t, st, flood, pkey(t, "f4")) || hasProvider(t, st, x, pkey(t, "x4")) {
		t.Fatal("a write over the share was kept")
	}
	// A record written again is the newest of its peer's.
	putProvider(t, st, flood, pkey(t, "f4"))
	y := newPeer(t)
	putProvider(t, st, y, pkey(t, "y0"))
	if !hasProvider(t, st, flood, pkey(t, "f4")) || hasProvider(t, st, flood, pkey(t, "f5")) || !hasProvider(t, st, y, pkey(t, "y0")) {
		t.Fatal("the oldest record did not give way after a rewrite")
	}
	checkProviderStore(t, st)
	if records, peers, _ := st.Stats(); records != 8 || peers != 3 || st.Evicted() != 5 {
		t.Fatalf("%d records of %d peers, %d evicted", records, peers, st.Evicted())
	}
}

// A store of the default bounds stays under them whatever a flood of
// records of Parley's form writes, and its queries answer per key.
func TestProviderStoreBoundsAFlood(t *testing.T) {
	ctx := context.Background()
	st := NewProviderStore(ProviderStoreConfig{Self: newPeer(t)})
	b, err := st.Batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peers := make([]peer.ID, 8)
	for i := range peers {
		peers[i] = newPeer(t)
	}
	for i := range 20_000 {
		p := peers[i%len(peers)]
		k := ds.NewKey("/providers/" + base32.RawStdEncoding.EncodeToString(pkey(t, fmt.Sprint(i))) + "/" + base32.RawStdEncoding.EncodeToString([]byte(p)))
		if err := b.Put(ctx, k, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	records, n, dropped := st.Stats()
	if records != len(peers)*DefaultMaxProviderRecordsPerPeer || n != len(peers) || dropped != uint64(20_000-records) {
		t.Fatalf("records %d, peers %d, dropped %d", records, n, dropped)
	}
}

// FuzzProviderStore writes and deletes records under arbitrary datastore
// keys and announcement keys: nothing panics, and the counts stay true
// (checkProviderStore).
func FuzzProviderStore(f *testing.F) {
	p := newPeer(f)
	good := "/providers/" + base32.RawStdEncoding.EncodeToString(pkey(f, "go")) + "/" + base32.RawStdEncoding.EncodeToString([]byte(p))
	f.Add(good, []byte("x"))
	f.Add("/providers/AAAA/BBBB", []byte{})
	f.Add("/providers//", []byte{1})
	f.Add("/other/key", []byte{2})
	f.Fuzz(func(t *testing.T, key string, announce []byte) {
		ctx := context.Background()
		st := NewProviderStore(ProviderStoreConfig{MaxRecords: 2, MaxPerPeer: 1, MaxPeers: 1})
		_ = st.Admit(p, announce)
		k := ds.NewKey(key)
		if err := st.Put(ctx, k, announce); err != nil {
			t.Fatal(err)
		}
		checkProviderStore(t, st)
		kept, _, _ := st.Stats()
		has, err := st.Has(ctx, k)
		if err != nil || has != (kept == 1) {
			t.Fatalf("has %v, kept %d, err %v", has, kept, err)
		}
		res, err := st.Query(ctx, dsq.Query{Prefix: "/providers/"})
		if err != nil {
			t.Fatal(err)
		}
		all, err := res.Rest()
		if err != nil || len(all) != kept {
			t.Fatalf("query: %d entries, kept %d, err %v", len(all), kept, err)
		}
		if err := st.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		checkProviderStore(t, st)
		if kept, peers, _ := st.Stats(); kept != 0 || peers != 0 {
			t.Fatalf("after delete: %d records of %d peers", kept, peers)
		}
	})
}

// checkProviderStore checks the store's accounting against its records:
// every record is in its peer's list and the peer in the bucket of its
// count, lists run oldest first, and the bounds hold.
func checkProviderStore(t testing.TB, st *ProviderStore) {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	total, perPeer := 0, make(map[string]int)
	for kb, m := range st.keys {
		if len(m) == 0 {
			t.Fatalf("key %s has an empty map", kb)
		}
		for pb, r := range m {
			total++
			perPeer[pb]++
			pp := st.peers[pb]
			if pp == nil || r.kb != kb || r.entry == nil || r.entry.Value != r {
				t.Fatalf("record %s/%s not in its peer's list", kb, pb)
			}
		}
	}
	if total != st.total || len(perPeer) != len(st.peers) {
		t.Fatalf("total %d of %d peers, counted %d of %d", st.total, len(st.peers), total, len(perPeer))
	}
	others, peers, inBuckets := 0, 0, 0
	for pb, pp := range st.peers {
		if pp.pb != pb || pp.n() != perPeer[pb] || pp.n() == 0 {
			t.Fatalf("peer %s: list of %d, %d records", pb, pp.n(), perPeer[pb])
		}
		var last uint64
		for e := pp.recs.Front(); e != nil; e = e.Next() {
			r := e.Value.(*provRec)
			if st.keys[r.kb][pb] != r || r.at <= last || r.at > st.clock {
				t.Fatalf("peer %s: list out of order or stale", pb)
			}
			last = r.at
		}
		if pb == st.self {
			continue
		}
		others += pp.n()
		peers++
		if pp.n() > st.cfg.MaxPerPeer || st.byCount[pp.n()][pb] != pp {
			t.Fatalf("peer %s with %d records not in its bucket", pb, pp.n())
		}
	}
	for n, b := range st.byCount {
		inBuckets += len(b)
		for pb, pp := range b {
			if n == 0 || pb == st.self || st.peers[pb] != pp || pp.n() != n {
				t.Fatalf("bucket %d holds peer %s of %d records", n, pb, pp.n())
			}
		}
	}
	if inBuckets != peers || others > st.cfg.MaxRecords || peers > st.cfg.MaxPeers {
		t.Fatalf("%d records of %d peers (%d in buckets) over bounds %d, %d", others, peers, inBuckets, st.cfg.MaxRecords, st.cfg.MaxPeers)
	}
}

// Random writes, rewrites and deletes of a few peers (this node among
// them) over a few keys, in a store small enough to be full most of the
// time, keep the accounting true after every step; Admit says what Put
// then does; and a peer with fewer records than another never finds a
// full store closed to it.
func TestProviderStoreAccountingUnderEviction(t *testing.T) {
	ctx := context.Background()
	rng := mrand.New(mrand.NewPCG(1, 2))
	self := newPeer(t)
	ids := []peer.ID{self}
	for range 7 {
		ids = append(ids, newPeer(t))
	}
	keys := make([][]byte, 12)
	for i := range keys {
		keys[i] = pkey(t, fmt.Sprint("k", i))
	}
	st := NewProviderStore(ProviderStoreConfig{Self: self, MaxRecords: 9, MaxPerPeer: 5, MaxPeers: 4})
	for i := range 20_000 {
		p, key := ids[rng.IntN(len(ids))], keys[rng.IntN(len(keys))]
		k := ds.NewKey("/providers/" + base32.RawStdEncoding.EncodeToString(key) + "/" + base32.RawStdEncoding.EncodeToString([]byte(p)))
		if rng.IntN(4) == 0 {
			if err := st.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
		} else {
			admit := st.Admit(p, key)
			if !admit {
				checkRefusalFair(t, st, p)
			}
			_, _, before := st.Stats()
			if err := st.Put(ctx, k, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			has, err := st.Has(ctx, k)
			if err != nil || has != admit {
				t.Fatalf("step %d: Admit said %v, Put kept %v (%v)", i, admit, has, err)
			}
			if _, _, after := st.Stats(); (after == before) != admit {
				t.Fatalf("step %d: Admit said %v, drops went %d → %d", i, admit, before, after)
			}
		}
		checkProviderStore(t, st)
	}
	if st.Evicted() == 0 {
		t.Fatal("the store was never full")
	}
}

// checkRefusalFair checks that a record of p was refused only because p
// holds MaxPerPeer records or, the store being full, no other peer holds
// more than one record more than p.
func checkRefusalFair(t testing.TB, st *ProviderStore, p peer.ID) {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	pb := base32.RawStdEncoding.EncodeToString([]byte(p))
	n := 0
	if pp := st.peers[pb]; pp != nil {
		n = pp.n()
	}
	if n >= st.cfg.MaxPerPeer {
		return
	}
	if n == 0 {
		t.Fatalf("a new peer's record refused (%d peers)", len(st.peers))
	}
	for qb, pp := range st.peers {
		if qb != st.self && pp.n() > n+1 {
			t.Fatalf("a record of a peer with %d refused while another holds %d", n, pp.n())
		}
	}
}
