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

// A stranger puts valid cards of its own under ever new agent names: under
// kad-dht's own value store, the node keeps MaxPerPeer of them and refuses
// the rest; its own cards and replacements always fit; the total is bounded.
func TestValueStoreBoundsCardsPerNode(t *testing.T) {
	ctx := context.Background()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := peer.IDFromPrivateKey(priv)
	st := NewValueStore(ValueStoreConfig{Self: self, MaxRecords: 12, MaxPerPeer: 4})
	vs := records.NewValueStore(st, record.NamespacedValidator{Namespace: Validator{}}, time.Hour)

	put := func(key crypto.PrivKey, agent string, seq uint64) error {
		p, _ := peer.IDFromPrivateKey(key)
		c := &Card{Peer: p, Agent: identity.AgentName(agent), Seq: seq, Expires: time.Now().Add(time.Hour).UnixMilli()}
		wire, err := SealCard(key, c)
		if err != nil {
			t.Fatal(err)
		}
		return vs.Put(ctx, c.Key(), record.MakePutRecord(c.Key(), wire))
	}
	sybil, _, _ := crypto.GenerateEd25519Key(rand.Reader)
	for i := range 10 {
		err := put(sybil, fmt.Sprintf("agent-%d", i), 1)
		if (err == nil) != (i < 4) {
			t.Fatalf("card %d of one stranger: %v", i, err)
		}
		if err != nil && !errors.Is(err, ErrStoreFull) {
			t.Fatalf("card %d refused with %v", i, err)
		}
	}
	if err := put(sybil, "agent-0", 2); err != nil {
		t.Fatalf("a newer card replacing one kept: %v", err)
	}
	for i := range 10 {
		if err := put(priv, fmt.Sprintf("mine-%d", i), 1); err != nil {
			t.Fatalf("this node's own card %d: %v", i, err)
		}
	}
	others := 0
	for range 10 {
		k, _, _ := crypto.GenerateEd25519Key(rand.Reader)
		if put(k, "a", 1) == nil {
			others++
		}
	}
	kept, refused := st.Stats()
	if kept > 12+10 || others == 0 || refused == 0 {
		t.Fatalf("kept %d, %d other nodes' cards, refused %d", kept, others, refused)
	}
}
