package discovery

import (
	"context"
	"fmt"
	"testing"

	ds "github.com/ipfs/go-datastore"
	"github.com/multiformats/go-base32"
)

// The provider store's bounds keep its memory down, but they are first
// come, first kept: 64 fresh keys (DefaultMaxProviderRecords /
// DefaultMaxProviderRecordsPerPeer) that announce 1,024 made-up keys each
// fill it, and from then on the node refuses every new announcement of
// any other peer until the strangers' records expire (MaxCardTTL plus
// skew, and they announce again before that). An agent registered after
// the flood is not findable through this node at all; in a small network
// where every DHT server is flooded, through none.
func TestReviewProviderFloodLocksOutNewAgents(t *testing.T) {
	ctx := context.Background()
	st := NewProviderStore(ProviderStoreConfig{Self: newPeer(t)})
	strangers := DefaultMaxProviderRecords / DefaultMaxProviderRecordsPerPeer
	for s := range strangers {
		p := newPeer(t)
		pb := base32.RawStdEncoding.EncodeToString([]byte(p))
		for i := range DefaultMaxProviderRecordsPerPeer {
			key := pkey(t, fmt.Sprintf("junk-%d-%d", s, i))
			if !st.Admit(p, key) {
				t.Fatalf("stranger %d's record %d refused", s, i)
			}
			if err := st.Put(ctx, ds.NewKey("/providers/"+base32.RawStdEncoding.EncodeToString(key)+"/"+pb), []byte{1}); err != nil {
				t.Fatal(err)
			}
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
}
