package discovery

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p-kad-dht/records"
	record "github.com/libp2p/go-libp2p-record"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// TestValueFloodDoesNotLockOutNewAgents: the value store is first come,
// first kept. Fresh keys cost nothing, so 128 of them, each putting its
// 64 cards (or 8,192 of them, each its public key under /pk/), fill the
// 8,192 places, and every later card of anyone is refused on this node
// until the flood's records expire (the flooder puts them again first).
// Now, as the provider store (TestProviderFloodDoesNotLockOutNewAgents),
// a full value store makes room: the newcomer's record takes the oldest
// of the node that holds the most, while that node keeps at least as many.
func TestValueFloodDoesNotLockOutNewAgents(t *testing.T) {
	ctx := context.Background()
	selfKey, _, _ := crypto.GenerateEd25519Key(rand.Reader)
	self, _ := peer.IDFromPrivateKey(selfKey)
	st := NewValueStore(ValueStoreConfig{Self: self})
	vs := records.NewValueStore(st, record.NamespacedValidator{Namespace: Validator{}}, time.Hour)
	put := func(key crypto.PrivKey, agent string) error {
		p, _ := peer.IDFromPrivateKey(key)
		c := &Card{Peer: p, Agent: identity.AgentName(agent), Seq: 1, Expires: time.Now().Add(time.Hour).UnixMilli()}
		wire, err := SealCard(key, c)
		if err != nil {
			t.Fatal(err)
		}
		return vs.Put(ctx, c.Key(), record.MakePutRecord(c.Key(), wire))
	}
	flooders := DefaultMaxValueRecords / DefaultMaxCardsPerPeer
	for f := range flooders {
		k, _, _ := crypto.GenerateEd25519Key(rand.Reader)
		for i := range DefaultMaxCardsPerPeer {
			if err := put(k, fmt.Sprintf("junk-%d", i)); err != nil {
				t.Fatalf("flooder %d's card %d: %v", f, i, err)
			}
		}
	}
	alice, _, _ := crypto.GenerateEd25519Key(rand.Reader)
	if err := put(alice, "reviewer"); err != nil {
		kept, refused := st.Stats()
		t.Fatalf("after %d fresh keys put %d cards, a new agent's card is refused: %v (store: %d records, %d refused)",
			flooders, flooders*DefaultMaxCardsPerPeer, errors.Unwrap(err), kept, refused)
	}
	// Another card of alice's fits too (the flooders hold 63 or 64 each),
	// and a flooder cannot take its place back.
	if err := put(alice, "reviewer-2"); err != nil {
		t.Fatalf("alice's second card: %v", err)
	}
	if kept, _ := st.Stats(); kept != DefaultMaxValueRecords || st.Evicted() != 2 {
		t.Fatalf("store: %d records, %d evicted", kept, st.Evicted())
	}
	checkValueStore(t, st)
}

// checkValueStore checks the store's accounting against its records.
func checkValueStore(t *testing.T, st *ValueStore) {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for p, ks := range st.byOwner {
		n += len(ks)
		for _, k := range ks {
			if _, ok := st.vals[k]; !ok || recordOwner(k) != p {
				t.Fatalf("owner %s lists %s, which is not its record held", p, k)
			}
		}
	}
	own := 0
	for k := range st.vals {
		if recordOwner(k) == st.cfg.Self {
			own++
		}
	}
	if n+own != len(st.vals) {
		t.Fatalf("%d records listed by owner, %d of this node's, %d held", n, own, len(st.vals))
	}
}
