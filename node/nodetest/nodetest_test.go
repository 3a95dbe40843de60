package nodetest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	manet "github.com/multiformats/go-multiaddr/net"
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

// A node restarted while another socket holds the port it had (the kernel
// handed it to another test's socket while the node was down) comes up on
// ports of its own; it failed the test with "address already in use".
func TestRestartWhileItsPortIsTakenComesUpElsewhere(t *testing.T) {
	nt := Start(t, 2)
	nt.mu.Lock()
	old := nt.listen[1][0]
	nt.mu.Unlock()
	hostPort, err := manet.ToNetAddr(old)
	if err != nil {
		t.Fatal(err)
	}
	nt.Crash(1)
	ln, err := net.Listen("tcp", hostPort.String())
	if err != nil {
		t.Fatalf("take the crashed node's port: %v", err)
	}
	defer ln.Close()
	n := nt.Restart(1)
	for _, a := range n.Host().Network().ListenAddresses() {
		if a.Equal(old) {
			t.Fatalf("node 1 listens on %s, which another socket holds", a)
		}
	}
	nt.WaitFor(20*time.Second, func() bool { return len(n.Host().Network().ConnsToPeer(nt.ID(0))) > 0 }, "node 1 to connect to node 0 again")
}
