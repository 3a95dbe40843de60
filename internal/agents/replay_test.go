package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/agents"
)

// A DHT poisoner keeps an agent's card from before it changed and from
// before it was withdrawn, and puts both back into the DHT (its own DHT
// server holds them and answers with them): lookups take the newest, the
// withdrawal, by seq. Sound as found by the hostile review of 2026-12-08;
// a poisoner that held three of the servers closest to the card's key
// (lookupQuorum) would be answered first and win.
func TestStaleCardReplayedInTheDHTLoses(t *testing.T) {
	const owner, searcher = 1, 2
	nt := startNet(t, 6)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ownerID := nt.ID(owner)
	key := discovery.CardKey(ownerID, "shifty")
	wireOf := func() []byte {
		w, err := nt.Node(0).DHT().GetValue(ctx, key)
		if err != nil {
			return nil
		}
		return w
	}
	seqOf := func(w []byte) uint64 {
		c, err := discovery.DecodeCard(w)
		if err != nil {
			t.Fatal(err)
		}
		return c.Seq
	}
	reg := func(caps ...string) {
		t.Helper()
		if _, err := svc(nt, owner).Register(ctx, agents.RegisterRequest{Name: "shifty", Capabilities: caps, TTLSeconds: 3600}); err != nil {
			t.Fatal(err)
		}
	}
	reg("old")
	var first []byte
	nt.WaitFor(20*time.Second, func() bool { first = wireOf(); return first != nil }, "the first card in the DHT")
	reg("new")
	nt.WaitFor(20*time.Second, func() bool { w := wireOf(); return w != nil && seqOf(w) > seqOf(first) }, "the changed card in the DHT")
	r := newRogue(t, nt, 0, 3, owner, searcher, 4, 5)
	if err := r.dht.PutValue(ctx, key, first); err != nil {
		t.Fatalf("rogue put: %v", err)
	}
	if c, err := svc(nt, searcher).FindCard(ctx, ownerID, "shifty"); err != nil || c == nil || len(c.Capabilities) != 1 || c.Capabilities[0] != "new" {
		t.Fatalf("after the old card was put back, the card found is %+v (%v), want the changed one", c, err)
	}
	if cs := find(t, nt, searcher, "cap:old"); len(cs) != 0 {
		t.Fatalf("find cap:old after the replay: %+v", cs)
	}
	if err := svc(nt, owner).Unregister(ctx, "shifty"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		c, err := svc(nt, searcher).FindCard(ctx, ownerID, "shifty")
		return err == nil && c == nil
	}, "the withdrawal in the DHT")
	if err := r.dht.PutValue(ctx, key, first); err != nil {
		t.Fatalf("rogue put: %v", err)
	}
	for _, i := range []int{0, searcher, 3} {
		if c, err := svc(nt, i).FindCard(ctx, ownerID, "shifty"); err != nil || c != nil {
			t.Fatalf("node %d: after a card from before the withdrawal was put back, found %+v (%v), want the withdrawal", i, c, err)
		}
	}
	if cs := find(t, nt, searcher, "agent:shifty"); len(cs) != 0 {
		t.Fatalf("find agent:shifty after the replay: %+v", cs)
	}
}
