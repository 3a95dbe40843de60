package node

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/test"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/internal/poll"
)

// An open relay (relay_service = open) keeps no note of the peers it
// served. Before, the relay service noted every peer its ACL let reserve
// (reach.served) and forgot one only in dropUnserved, which returns at
// once when the service is open; the ACL is asked before the relay's caps,
// so every reservation request, taken or refused, from every fresh key
// added an entry never removed: memory that strangers grew at will on a
// public relay. Now only a relay that serves its contacts and room members
// notes them (it has peers to drop when they stop being either).
func TestOpenRelayForgetsPeersGone(t *testing.T) {
	n, err := New(Config{
		Home:         filepath.Join(t.TempDir(), "relay"),
		ListenAddrs:  []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/0")},
		RelayService: true,
		RelayOpen:    true,
		Reachability: ReachabilityPublic,
		NoLocalAPI:   true,
		NoUI:         true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	relay := peer.AddrInfo{ID: n.ID(), Addrs: n.Host().Addrs()}
	const strangers = 24 // 8 taken (one IP), 16 refused: all noted
	for range strangers {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Connect(ctx, relay); err == nil {
			_, _ = client.Reserve(ctx, h, relay)
		}
		h.Close()
	}
	if !poll.Until(10*time.Second, func() bool { return len(n.Host().Network().Peers()) == 0 }) {
		t.Fatalf("the strangers are still connected: %v", n.Host().Network().Peers())
	}
	size := func() int {
		n.reach.mu.Lock()
		defer n.reach.mu.Unlock()
		return len(n.reach.served)
	}
	// Two relay ticks (dropUnserved runs on each).
	if !poll.Until(2*n.relayTick()+time.Second, func() bool { return size() == 0 }) {
		t.Fatalf("the open relay still notes %d peers it served, all gone (%d strangers asked)", size(), strangers)
	}
}

// A sweep of the relay service's served peers forgets a peer only if the
// relay granted it nothing since the sweep looked. Before, dropUnserved
// read the peers, checked each without the lock and then deleted it: a
// peer that came back and reserved again in between (its note written
// anew) lost the note, and was then never dropped when the user revoked
// it, for the reservation's whole term. Now each grant has a number, and
// the sweep deletes a note only if its number is the one it read.
func TestServedSweepKeepsAGrantMadeSinceItLooked(t *testing.T) {
	r := newReach(prometheus.NewRegistry())
	p := test.RandPeerIDFatal(t)
	r.noteServed(p)
	seen := r.servedPeers() // the sweep looks: p is gone, say
	r.noteServed(p)         // p connects again and reserves
	if r.forgetServed(p, seen[p]) {
		t.Fatal("the sweep forgot a peer granted a reservation after it looked")
	}
	if _, ok := r.servedPeers()[p]; !ok {
		t.Fatal("the peer's new grant is no longer noted")
	}
	if !r.forgetServed(p, r.servedPeers()[p]) {
		t.Fatal("the sweep kept a peer granted nothing since it looked")
	}
}

// An answer to a reservation asked before the reservation on that relay
// was lost is not recorded. Before, askRelay recorded whatever answer came
// back, checking only that the node was connected to the relay when it
// did: an ask made over a connection that closed (and the relay's
// reservation with it) while a new one opened was recorded as held, until
// its end an hour on, and the node gave out addresses through a relay that
// held nothing for it; an older failure could also overwrite a newer
// reservation. Now each relay's state counts the reservations lost on it
// (relayLost), an answer whose count changed since its ask began is
// dropped and the relay marked to be asked again, and an answer for a
// relay the node dropped meanwhile is dropped too.
func TestStaleRelayAnswerIsNotRecorded(t *testing.T) {
	n := &Node{reach: newReach(prometheus.NewRegistry())}
	r := n.reach
	p := test.RandPeerIDFatal(t)
	r.mu.Lock()
	st := r.relayState(p)
	gen := st.gen // the ask begins
	r.mu.Unlock()
	r.relayLost(p, errRelayClosed.Error()) // its connection closes; another opens
	rsvp := &client.Reservation{Expiration: time.Now().Add(time.Hour)}
	n.recordAnswer(p, st, gen, rsvp, nil)
	r.mu.Lock()
	expires, recheck := st.Expires, st.recheck
	r.mu.Unlock()
	if !expires.IsZero() {
		t.Fatalf("a reservation made over a connection since closed is recorded as held until %v", expires)
	}
	if !recheck {
		t.Fatal("the relay is not marked to be asked again after a stale answer")
	}

	// Dropped meanwhile (no longer trusted): its state is gone, and an
	// answer does not bring it back.
	r.mu.Lock()
	gen = st.gen
	delete(r.relays, p)
	r.mu.Unlock()
	n.recordAnswer(p, st, gen, nil, errRelayClosed)
	r.mu.Lock()
	_, back := r.relays[p]
	r.mu.Unlock()
	if back {
		t.Fatal("an answer brought back the state of a relay the node dropped")
	}
}
