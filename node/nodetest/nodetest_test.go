package nodetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A connection whose handshake the gater let through just before
// BlockDirect, and that its node adds only after BlockDirect closed the
// live ones, is closed too. Before, it stayed open for good: a CI run of
// TestRelayRefusedDialSaysWhy waited 10 s for node 2 to see its direct
// connection to node 1 closed (node 1 had added it 0.3 ms after
// BlockDirect returned), about 1 run in 40.
func TestBlockDirectClosesAConnectionAddedAfterIt(t *testing.T) {
	nt := Start(t, 2)
	a, b := nt.ID(0), nt.ID(1)
	conns := func() int {
		return len(nt.Node(0).Host().Network().ConnsToPeer(b)) + len(nt.Node(1).Host().Network().ConnsToPeer(a))
	}
	var mu sync.Mutex
	passed := 0
	fired := make(chan struct{})
	nt.mu.Lock()
	nt.secured = func(self, p peer.ID) {
		mu.Lock()
		defer mu.Unlock()
		if passed++; passed == 2 {
			// Blocked once both ends let the connection through, while
			// this one has not added it yet: BlockDirect closes none of
			// it, and the other end checked it before.
			if self == a {
				nt.BlockDirect(0, 1)
			} else {
				nt.BlockDirect(1, 0)
			}
			close(fired)
		}
	}
	nt.mu.Unlock()
	// A new connection, whichever end makes it: the nodes' own dials may
	// make one before this Connect does, and a connection whose handshake
	// passed before the hook was set may be added after ClosePeer (CI
	// flakes: the Connect found one, and no handshake ran). So the old
	// ones are closed and a new one asked for until a handshake fires.
	isFired := func() bool {
		select {
		case <-fired:
			return true
		default:
			return false
		}
	}
	nt.WaitFor(20*time.Second, func() bool {
		if isFired() {
			return true
		}
		_ = nt.Node(1).Host().Network().ClosePeer(a)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = nt.Node(1).Host().Connect(ctx, peer.AddrInfo{ID: a, Addrs: nt.Node(0).Host().Addrs()})
		return isFired()
	}, "both ends' handshakes of a new connection to pass the gater")
	nt.WaitFor(5*time.Second, func() bool { return conns() == 0 }, "nodes 0 and 1 to hold no direct connection once blocked")
}
