package node_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// `parley peers` names each address of a peer once. Two nodes that dial
// each other at once (both found the other through mDNS, or both redial a
// contact after a restart) keep two connections; QUIC dials leave from the
// listening port, so the inbound one comes from the same address as the
// outbound one goes to, and the list named it twice.
func TestPeersListEachAddressOnce(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithQUIC())
	a, b := nt.Node(0), nt.Node(1)
	quicOnly := func(n *node.Node) peer.AddrInfo {
		ai := peer.AddrInfo{ID: n.ID()}
		for _, m := range n.Host().Addrs() {
			if _, err := m.ValueForProtocol(0x01cc); err == nil { // quic-v1
				ai.Addrs = append(ai.Addrs, m)
			}
		}
		return ai
	}
	// Dial both ways at once until the nodes hold two connections on one
	// address.
	if !nodetest.Poll(30*time.Second, func() bool {
		a.Host().Network().ClosePeer(b.ID())
		b.Host().Network().ClosePeer(a.ID())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, pair := range [][2]*node.Node{{a, b}, {b, a}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pair[0].Host().Connect(ctx, quicOnly(pair[1])) // a failure is tried again
			}()
		}
		wg.Wait()
		cs := a.Host().Network().ConnsToPeer(b.ID())
		return len(cs) == 2 && cs[0].RemoteMultiaddr().Equal(cs[1].RemoteMultiaddr())
	}) {
		t.Fatalf("the nodes never held two connections on one address")
	}
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	peers, err := c.Peers(context.Background())
	if err != nil || len(peers) != 1 {
		t.Fatalf("peers = %+v, %v", peers, err)
	}
	var conns []string
	for _, cn := range a.Host().Network().ConnsToPeer(b.ID()) {
		conns = append(conns, cn.RemoteMultiaddr().String()+" "+cn.Stat().Direction.String())
	}
	seen := make(map[string]bool)
	for _, s := range peers[0].Addrs {
		if seen[s] {
			t.Fatalf("address %s listed twice: %v (connections %v)", s, peers[0].Addrs, conns)
		}
		seen[s] = true
	}
	if len(peers[0].Addrs) == 0 {
		t.Fatalf("no address listed (connections %v)", conns)
	}
	t.Logf("listed %v for connections %v", peers[0].Addrs, conns)
}
