package discovery

import (
	"context"
	"crypto/rand"
	"fmt"
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
// buffers its writes, so the bounds hold when they reach the store; Admit
// turns announcements away early once they do); a delete (expiry) frees
// the room again.
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
	pm, err = records.NewProviderManager(self, ps, st)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		add(pm, a, pkey(t, fmt.Sprintf("a%d", i)))
	}
	add(pm, a, make([]byte, 40))
	add(pm, d, pkey(t, "d0"))
	for i := range 20 {
		add(pm, self, pkey(t, fmt.Sprintf("self%d", i)))
	}
	if err := pm.Close(); err != nil {
		t.Fatal(err)
	}
	kept, peers, dropped := st.Stats()
	// a: shared and 3 of its 6; b, c: 1 each; d: a fourth peer; this node: all.
	if kept != 4+1+1+20 || peers != 4 || dropped != 3+1+1 {
		t.Fatalf("store holds %d records of %d peers, dropped %d", kept, peers, dropped)
	}
	if st.Admit(a, pkey(t, "a9")) || st.Admit(d, pkey(t, "d1")) || st.Admit(b, make([]byte, 40)) {
		t.Fatal("Admit lets an announcement out of bounds through")
	}
	if !st.Admit(a, shared) || !st.Admit(self, pkey(t, "self99")) {
		t.Fatal("Admit refuses a record already kept, or this node's own")
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
	want := []peer.ID{a, b, c}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("providers of the shared key: %v, want %v", got, want)
	}
	// A deleted (expired) record frees its peer's room.
	k := ds.NewKey("/providers/" + base32.RawStdEncoding.EncodeToString(shared) + "/" + base32.RawStdEncoding.EncodeToString([]byte(a)))
	if ok, _ := st.Has(ctx, k); !ok {
		t.Fatal("record of the shared key missing")
	}
	if err := st.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if !st.Admit(a, pkey(t, "a9")) {
		t.Fatal("no room after a delete")
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
// keys and announcement keys: nothing panics, and the counts stay true.
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
		if kept, peers, _ := st.Stats(); kept != 0 || peers != 0 {
			t.Fatalf("after delete: %d records of %d peers", kept, peers)
		}
	})
}
