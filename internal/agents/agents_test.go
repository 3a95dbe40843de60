package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/routing"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/agents"
)

// The 20-node testnet (mDNS off): discovery through the DHT, bad cards,
// selective exposure and crashed nodes. Contacts are made through the real
// contact service (internal/contacts), not injected.
func TestTestnet20(t *testing.T) {
	if testing.Short() {
		t.Skip("20 nodes")
	}
	nt := startNet(t, 20)
	ctx := context.Background()
	const owner, searcher = 7, 13
	ownerID := nt.ID(owner)

	_, err := svc(nt, owner).Register(ctx, agents.RegisterRequest{
		Name: "Reviewer", Role: "code review", Capabilities: []string{"go", "Rust", "go"},
		Client: "claude-code", Session: "s-1", WorkingOn: "the secret plan", TTLSeconds: 3600,
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("find by name and capability", func(t *testing.T) {
		nt.WaitFor(30*time.Second, func() bool {
			return hasCard(find(t, nt, searcher, "agent:reviewer"), ownerID, "reviewer", "go", "rust")
		}, "node %d to find the agent by name", searcher)
		for _, q := range []string{"reviewer", "REVIEWER", "cap:rust", "go", "handle:node7", "node7"} {
			nt.WaitFor(20*time.Second, func() bool { return hasCard(find(t, nt, searcher, q), ownerID, "reviewer") },
				"node %d to find the agent with %q", searcher, q)
		}
		cs := find(t, nt, searcher, "cap:go")
		raw, _ := json.Marshal(cs)
		if contains(string(raw), "secret plan") || contains(string(raw), "code review") {
			t.Fatalf("a public card carries what the agent works on, or its role: %s", raw)
		}
		c := cs[0]
		if c.Handle != "node7" || c.Client != "claude-code" || !c.Expires.After(time.Now()) {
			t.Fatalf("card %+v", c)
		}
		// The card itself, straight from the DHT, on a node that is neither.
		card, err := svc(nt, 19).FindCard(ctx, ownerID, "reviewer")
		if err != nil || card == nil || card.Peer != ownerID || card.Seq == 0 || card.Role != "" {
			t.Fatalf("DHT card (no role on it): %+v, %v", card, err)
		}
		for _, q := range []string{"nobody-has-this", "no such thing!"} {
			if cs := find(t, nt, searcher, q); len(cs) != 0 {
				t.Fatalf("find %q = %+v, want none", q, cs)
			}
		}
		// A query that can match nothing is refused, saying why.
		for _, q := range []string{"", "   ", "cap:", "handle:" + string(make([]byte, 300))} {
			if cs, err := svc(nt, searcher).Find(ctx, q); !errors.Is(err, agents.ErrBadInput) || len(cs) != 0 {
				t.Fatalf("find %q = %+v, %v; want ErrBadInput", q, cs, err)
			}
		}
	})

	t.Run("forged expired and flooded cards are rejected", func(t *testing.T) {
		r := newRogue(t, nt, 0, 3, owner, searcher, 19)
		now := time.Now()
		key := discovery.CardKey(ownerID, "reviewer")
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// A card for the owner's agent key signed by the rogue, with a
		// higher seq and a capability of its own.
		forged := forgeCard(t, r.priv, ownerID, "reviewer", []string{"evil"}, uint64(now.UnixMilli())+1e6, now.Add(time.Hour).UnixMilli())
		// The rogue's own genuine card stored under the owner's key.
		misfiled := forgeCard(t, r.priv, r.id, "reviewer", []string{"evil"}, uint64(now.UnixMilli())+2e6, now.Add(time.Hour).UnixMilli())
		for _, v := range [][]byte{forged, misfiled} {
			if err := r.dht.PutValue(rctx, key, v); err != nil {
				t.Fatalf("rogue put: %v", err)
			}
		}
		// Expired, too long-lived and oversized cards under its own keys,
		// and a flood of them.
		bad := map[string][]byte{
			discovery.CardKey(r.id, "expired"):  forgeCard(t, r.priv, r.id, "expired", nil, 5, now.Add(-time.Minute).UnixMilli()),
			discovery.CardKey(r.id, "forever"):  forgeCard(t, r.priv, r.id, "forever", nil, 5, now.Add(48*time.Hour).UnixMilli()),
			discovery.CardKey(r.id, "big"):      make([]byte, discovery.MaxCardWire+1),
			discovery.CardKey(r.id, "garbage"):  []byte("not a card"),
			discovery.CardKey(ownerID, "ghost"): forgeCard(t, r.priv, ownerID, "ghost", nil, 5, now.Add(time.Hour).UnixMilli()),
		}
		for i := range 100 {
			name := fmt.Sprintf("flood-%d", i)
			bad[discovery.CardKey(r.id, identity.AgentName(name))] = forgeCard(t, r.priv, r.id, name, nil, 5, now.Add(-time.Second).UnixMilli())
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for k, v := range bad {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				_ = r.dht.PutValue(rctx, k, v)
			}()
		}
		wg.Wait()

		// Honest nodes still serve the owner's card, and none of the bad
		// ones. A lookup walks the DHT to the nodes closest to its key, so
		// each of the flood's records is looked up from one of the four
		// nodes in turn (four lookups of each cost half a minute under
		// the race detector and ask the same closest nodes), the others
		// from all four.
		askers := []int{0, 3, searcher, 19}
		for _, i := range askers {
			card, err := svc(nt, i).FindCard(ctx, ownerID, "reviewer")
			if err != nil || card == nil || card.Peer != ownerID || len(card.Capabilities) != 2 {
				t.Fatalf("node %d: owner's card after the forgery: %+v, %v", i, card, err)
			}
		}
		turn := 0
		for k := range bad {
			from := askers
			if contains(k, "/flood-") {
				from, turn = askers[turn%len(askers):][:1], turn+1
			}
			for _, i := range from {
				if _, err := nt.Node(i).DHT().GetValue(ctx, k); !errors.Is(err, routing.ErrNotFound) {
					t.Fatalf("node %d: bad record %.60s: err = %v, want not found", i, k, err)
				}
			}
		}
		if cs := find(t, nt, searcher, "cap:evil"); len(cs) != 0 {
			t.Fatalf("found the forged capability: %+v", cs)
		}
		for _, cs := range [][]agents.CardView{find(t, nt, searcher, "reviewer"), find(t, nt, 0, "cap:go")} {
			for _, c := range cs {
				if c.PeerID != ownerID.String() || len(c.Capabilities) != 2 {
					t.Fatalf("a forged card was found: %+v", c)
				}
			}
		}

		// The rogue also provides cap:evil and hands out, on /parley/cards/1,
		// the owner's genuine card (not its own), the forgery and an expired
		// card: the searcher takes none of them.
		genuine, err := nt.Node(0).DHT().GetValue(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		r.h.SetStreamHandler(agents.ProtocolCards, func(st network.Stream) {
			defer st.Close()
			for _, w := range [][]byte{genuine, forged, bad[discovery.CardKey(r.id, "expired")]} {
				_ = discovery.WriteFrame(st, w)
			}
		})
		evil, _ := discovery.ProviderKey(discovery.KindCap, "evil")
		// A deadline of its own: the puts and finds above may have used up
		// rctx's on a loaded machine.
		pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
		defer pcancel()
		if err := r.dht.Provide(pctx, evil, true); err != nil {
			t.Fatal(err)
		}
		before := counter(t, nt, searcher, "parley_discovery_rejected_total")
		nt.WaitFor(20*time.Second, func() bool {
			if cs := find(t, nt, searcher, "cap:evil"); len(cs) != 0 {
				t.Fatalf("found a card the rogue handed out: %+v", cs)
			}
			return counter(t, nt, searcher, "parley_discovery_rejected_total") >= before+3
		}, "the searcher to refuse the rogue's three cards")
		if n := counter(t, nt, searcher, "parley_discovery_rejected_total", "reason", "card_forged"); n < 2 {
			t.Fatalf("card_forged rejections = %v, want ≥ 2", n)
		}
	})

	const dev, friend, stranger = 5, 3, 9
	t.Run("a non-contact does not see working_on", func(t *testing.T) {
		nt.Befriend(t, friend, dev)
		_, err := svc(nt, dev).Register(ctx, agents.RegisterRequest{
			Name: "builder", Role: "builds things", Capabilities: []string{"parser"}, Session: "b-1",
			WorkingOn: "refactoring the parser", TTLSeconds: 3600,
		})
		if err != nil {
			t.Fatal(err)
		}
		busy := "busy"
		if _, err := svc(nt, dev).Heartbeat(ctx, "builder", agents.HeartbeatRequest{State: &busy}); err != nil {
			t.Fatal(err)
		}
		nt.WaitFor(15*time.Second, func() bool {
			e, ok := whoHas(nt, friend, nt.ID(dev), "builder")
			return ok && e.State == "busy" && e.WorkingOn == "refactoring the parser" && !e.Local && e.Handle == "node5" &&
				e.Role == "builds things" && len(e.Capabilities) == 1
		}, "the contact to see the agent busy, with what it works on")
		// The stranger finds the public card but never what it works on.
		nt.WaitFor(20*time.Second, func() bool { return hasCard(find(t, nt, stranger, "cap:parser"), nt.ID(dev), "builder") },
			"the stranger to find the public card")
		raw, _ := json.Marshal(find(t, nt, stranger, "builder"))
		if contains(string(raw), "refactoring") {
			t.Fatalf("the public card carries working_on: %s", raw)
		}
		for _, e := range svc(nt, stranger).Who(ctx) {
			if !e.Local {
				t.Fatalf("the stranger sees %+v", e)
			}
		}
		if n := counter(t, nt, stranger, "parley_presence_received_total"); n != 0 {
			t.Fatalf("the stranger took %v presence messages", n)
		}
		// Presence pushed by a non-contact is refused.
		r := newRogue(t, nt, dev)
		p := &discovery.Presence{Peer: r.id, Seq: 1, Time: time.Now().UnixMilli(),
			Agents: []discovery.AgentState{{Agent: "spy", State: discovery.StateBusy, WorkingOn: "listening"}}}
		wire, err := discovery.SealPresence(r.priv, p)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := r.h.NewStream(ctx, nt.ID(dev), discovery.ProtocolPresence); err == nil {
			_ = discovery.WriteFrame(st, wire)
			_ = st.Close()
		}
		nt.WaitFor(10*time.Second, func() bool {
			return counter(t, nt, dev, "parley_discovery_rejected_total", "reason", "presence_not_contact") >= 1
		}, "the presence of a non-contact to be refused")
		if _, ok := whoHas(nt, dev, r.id, "spy"); ok {
			t.Fatal("a non-contact's presence was taken")
		}
	})

	t.Run("stale local agents are swept within their TTL", func(t *testing.T) {
		for i := range 10 {
			if _, err := svc(nt, dev).Register(ctx, agents.RegisterRequest{Name: fmt.Sprintf("temp-%d", i), TTLSeconds: 1}); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		nt.WaitFor(15*time.Second, func() bool {
			_, ok := whoHas(nt, friend, nt.ID(dev), "temp-3")
			return ok
		}, "the contact to see a short-lived agent")
		nt.WaitFor(3*time.Second, func() bool {
			for _, a := range svc(nt, dev).List() {
				if a.Name != "builder" {
					return false
				}
			}
			return true
		}, "the short-lived agents to be swept")
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Logf("swept after %v", d) // the TTL is checked at every read: List never shows them after 1 s
		}
		if _, err := svc(nt, dev).Heartbeat(ctx, "temp-3", agents.HeartbeatRequest{}); !errors.Is(err, agents.ErrUnknownAgent) {
			t.Fatalf("heartbeat of a swept agent: %v", err)
		}
		nt.WaitFor(5*time.Second, func() bool {
			_, ok := whoHas(nt, friend, nt.ID(dev), "temp-3")
			return !ok
		}, "the contact to stop listing the swept agents")
	})

	t.Run("unregister withdraws the card", func(t *testing.T) {
		if _, err := svc(nt, 11).Register(ctx, agents.RegisterRequest{Name: "fleeting", Capabilities: []string{"fleet"}, TTLSeconds: 3600}); err != nil {
			t.Fatal(err)
		}
		nt.WaitFor(20*time.Second, func() bool { return hasCard(find(t, nt, 2, "fleeting"), nt.ID(11), "fleeting") },
			"the agent to be found")
		if err := svc(nt, 11).Unregister(ctx, "fleeting"); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"fleeting", "nobody"} {
			if err := svc(nt, 11).Unregister(ctx, name); !errors.Is(err, agents.ErrUnknownAgent) {
				t.Fatalf("unregister of %s, not registered: %v", name, err)
			}
		}
		nt.WaitFor(20*time.Second, func() bool {
			return len(find(t, nt, 2, "agent:fleeting")) == 0 && len(find(t, nt, 2, "cap:fleet")) == 0
		}, "the withdrawn agent to be found no more")
		card, err := svc(nt, 2).FindCard(ctx, nt.ID(11), "fleeting")
		if err != nil || card != nil {
			t.Fatalf("DHT card after withdrawal: %+v, %v (want the tombstone, seen as nil)", card, err)
		}
	})

	t.Run("a crashed node's agents go stale within the TTL", func(t *testing.T) {
		if _, ok := whoHas(nt, friend, nt.ID(dev), "builder"); !ok {
			t.Fatal("the contact does not see the agent before the crash")
		}
		nt.Crash(dev)
		start := time.Now()
		limit := agents.MissedHeartbeats*testHeartbeat + time.Second
		nt.WaitFor(limit, func() bool {
			_, ok := whoHas(nt, friend, nt.ID(dev), "builder")
			return !ok
		}, "the crashed node's agent to go stale")
		t.Logf("stale %v after the crash", time.Since(start))
		// It comes back with the node: registrations outlive a restart.
		nt.Restart(dev)
		nt.WaitFor(20*time.Second, func() bool {
			e, ok := whoHas(nt, friend, nt.ID(dev), "builder")
			return ok && e.WorkingOn == "refactoring the parser"
		}, "the restarted node's agent to be back")
		nt.WaitFor(20*time.Second, func() bool {
			return counter(t, nt, dev, "parley_agent_card_publish_total", "kind", "card", "result", "ok") >= 1
		}, "the restarted node to publish its restored agent's card again")
	})
}
