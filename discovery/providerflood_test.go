package discovery

import (
	"context"
	"fmt"
	"testing"

	ds "github.com/ipfs/go-datastore"
	"github.com/multiformats/go-base32"
)

// The provider store's bounds keep its memory down. Before, they were
// first come, first kept: 64 fresh keys (DefaultMaxProviderRecords /
// DefaultMaxProviderRecordsPerPeer) that announced 1,024 made-up keys each
// filled it, and from then on the node refused every new announcement of
// any other peer until the strangers' records expired (MaxCardTTL plus
// skew, and they announce again before that): an agent registered after
// the flood was not findable through this node at all. Now a full store
// makes room: the new agent's record takes the oldest record of a
// flooder, the total stays at the bound, and the flooders cannot take it
// back (each still holds more than the agent).
func TestProviderFloodDoesNotLockOutNewAgents(t *testing.T) {
	ctx := context.Background()
	st := NewProviderStore(ProviderStoreConfig{Self: newPeer(t)})
	strangers := DefaultMaxProviderRecords / DefaultMaxProviderRecordsPerPeer
	put := func(key []byte, pb string) {
		t.Helper()
		if err := st.Put(ctx, ds.NewKey("/providers/"+base32.RawStdEncoding.EncodeToString(key)+"/"+pb), []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	var first string
	for s := range strangers {
		p := newPeer(t)
		flooder := base32.RawStdEncoding.EncodeToString([]byte(p))
		if s == 0 {
			first = flooder
		}
		for i := range DefaultMaxProviderRecordsPerPeer {
			key := pkey(t, fmt.Sprintf("junk-%d-%d", s, i))
			if !st.Admit(p, key) {
				t.Fatalf("stranger %d's record %d refused", s, i)
			}
			put(key, flooder)
		}
	}
	alice := newPeer(t)
	key, err := ProviderKey(KindHandle, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Admit(alice, key.Hash()) {
		records, peers, refused := st.Stats()
		t.Fatalf("after %d fresh keys announced %d records, a new agent's announcement of handle:alice is refused (store: %d records of %d peers, %d refused)",
			strangers, strangers*DefaultMaxProviderRecordsPerPeer, records, peers, refused)
	}
	ab := base32.RawStdEncoding.EncodeToString([]byte(alice))
	put(key.Hash(), ab)
	// The record alice's took was the first flooder's oldest; its new one
	// finds no room: it would take another flooder's, and they hold but
	// one more.
	put(pkey(t, "junk-more"), first)
	if ok, _ := st.Has(ctx, ds.NewKey("/providers/"+base32.RawStdEncoding.EncodeToString(pkey(t, "junk-0-0"))+"/"+first)); ok {
		t.Fatal("the first flooder's oldest record is still kept")
	}
	if ok, _ := st.Has(ctx, ds.NewKey("/providers/"+base32.RawStdEncoding.EncodeToString(pkey(t, "junk-more"))+"/"+first)); ok {
		t.Fatal("a flooder took back the room")
	}
	if ok, err := st.Has(ctx, ds.NewKey("/providers/"+base32.RawStdEncoding.EncodeToString(key.Hash())+"/"+ab)); err != nil || !ok {
		t.Fatalf("alice's record was not kept (%v)", err)
	}
	checkProviderStore(t, st)
	if records, peers, _ := st.Stats(); records != DefaultMaxProviderRecords || peers != strangers+1 || st.Evicted() != 1 {
		t.Fatalf("store: %d records of %d peers, %d evicted", records, peers, st.Evicted())
	}
}
