package node

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/internal/poll"
)

// Review finding: the relay service notes every peer its ACL lets reserve
// (reach.served) and forgets one only in dropUnserved, which returns at
// once when the service is open (relay_service = open). The ACL is asked
// before the relay's caps, so with an open relay every reservation request,
// taken or refused, from every fresh key adds an entry that is never
// removed, also once the peer is long gone: memory that strangers grow at
// will on a public relay.
func TestReviewOpenRelayForgetsPeersGone(t *testing.T) {
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
	if !poll.Until(2*relayTick+time.Second, func() bool { return size() == 0 }) {
		t.Fatalf("the open relay still notes %d peers it served, all gone (%d strangers asked)", size(), strangers)
	}
}
