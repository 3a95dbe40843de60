package serving_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/internal/serving"
)

func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// calls records the peers fn was called for.
type calls struct {
	mu    sync.Mutex
	peers []peer.ID
}

func (c *calls) add(p peer.ID) {
	c.mu.Lock()
	c.peers = append(c.peers, p)
	c.mu.Unlock()
}

func (c *calls) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.peers)
}

// TestWatchCallsForAPeerThatStartsServing: a peer connected before it
// served the protocol is named once it does; one that starts serving
// another protocol is not, nor one after the watch ended.
func TestWatchCallsForAPeerThatStartsServing(t *testing.T) {
	a, b := newHost(t), newHost(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got calls
	loop, err := serving.Watch(ctx, a, "/parley-test/watched/1", got.add)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); loop() }()

	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if err := a.Connect(cctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatal(err)
	}
	// Another protocol first: not named. Then the watched one: named.
	b.SetStreamHandler("/parley-test/other/1", func(s network.Stream) { s.Reset() })
	waitFor(t, func() bool { return hasProtocol(a, b.ID(), "/parley-test/other/1") }, "a to learn b's other protocol")
	b.SetStreamHandler("/parley-test/watched/1", func(s network.Stream) { s.Reset() })
	waitFor(t, func() bool { return got.n() == 1 }, "a to be told b serves the watched protocol")
	got.mu.Lock()
	if got.peers[0] != b.ID() {
		t.Errorf("told of %s, not of b", got.peers[0])
	}
	got.mu.Unlock()

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not end with its context")
	}
}

// TestWatchEndsWithItsContextUnrun: a watch whose loop never runs lets go
// of its subscription when its context ends, so the host's events do not
// wait on it (its buffer holds 16).
func TestWatchEndsWithItsContextUnrun(t *testing.T) {
	a := newHost(t)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := serving.Watch(ctx, a, "/parley-test/watched/1", func(peer.ID) {}); err != nil {
		t.Fatal(err)
	}
	cancel()
	em, err := a.EventBus().Emitter(new(event.EvtPeerProtocolsUpdated))
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 64 {
			_ = em.Emit(event.EvtPeerProtocolsUpdated{Peer: a.ID(), Added: []protocol.ID{"/parley-test/watched/1"}})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the host's events wait on a watch that ended")
	}
}

func hasProtocol(h host.Host, p peer.ID, pid protocol.ID) bool {
	ps, err := h.Peerstore().SupportsProtocols(p, pid)
	return err == nil && len(ps) == 1
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}
