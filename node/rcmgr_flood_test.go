package node_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A stranger that opens many TCP connections to a node and says nothing
// on them must not keep the node's contacts out. Each takes a slot of the
// resource manager's transient inbound connections (scaled from memory,
// some 80 on a machine of 24 GB) until the handshake times out (15 s),
// and is opened again at once; libp2p limits connections by source
// address (8 per IPv4 address, 64 per IPv6 /48: loopback is exempt, so
// here one address stands for the few a real attacker needs), not by
// whom the node deals with. The contact's address is in the resource
// manager's allowlist (allowKeeper), which lets it in on a budget of its
// own. The stranger dials from another address than the contact's
// (127.0.0.2), as it would on the Internet.
func TestUnfinishedHandshakesDoNotLockContactsOut(t *testing.T) {
	const a, b = 0, 1
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
	}))
	nt.Befriend(t, b, a)
	na := nt.Node(a)
	al := rcmgr.GetAllowlist(na.Host().Network().ResourceManager())
	if al == nil {
		t.Fatal("node has no resource manager allowlist")
	}
	contactAddr := ma.StringCast("/ip4/127.0.0.1/tcp/1")
	nt.WaitFor(10*time.Second, func() bool { return al.AllowedPeerAndMultiaddr(nt.ID(b), contactAddr) },
		"node %d's allowlist to hold its contact node %d's address", a, b)
	var direct ma.Multiaddr
	for _, x := range na.Host().Network().ListenAddresses() {
		if _, err := x.ValueForProtocol(ma.P_TCP); err == nil {
			direct = x
		}
	}
	port, _ := direct.ValueForProtocol(ma.P_TCP)
	const flood = 400
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	stranger := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	for range flood {
		c, err := stranger.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			if len(conns) == 0 {
				t.Skipf("no connection from 127.0.0.2 on this machine: %v", err)
			}
			break
		}
		conns = append(conns, c)
	}
	t.Logf("%d raw connections open", len(conns))
	_ = nt.Node(b).Host().Network().ClosePeer(nt.ID(a))
	_ = na.Host().Network().ClosePeer(nt.ID(b))
	nt.Node(b).Host().Network().(*swarm.Swarm).Backoff().Clear(nt.ID(a))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := nt.Node(b).Host().Connect(ctx, peer.AddrInfo{ID: nt.ID(a), Addrs: []ma.Multiaddr{direct}}); err != nil {
		t.Fatalf("node %d (a contact) could not connect to node %d while a stranger holds %d unfinished connections: %v",
			b, a, len(conns), fmt.Sprint(err))
	}
}

// The allowlist follows the contacts: a contact's address is in it, bound
// to the contact's peer ID (a stranger at the same address, behind the
// same NAT, is not let in on it once its handshake names it), and leaves
// it when the contact is revoked.
func TestAllowlistFollowsContactRemoval(t *testing.T) {
	const a, b, c = 0, 1, 2
	nt := nodetest.Start(t, 3)
	nt.Befriend(t, b, a)
	al := rcmgr.GetAllowlist(nt.Node(a).Host().Network().ResourceManager())
	if al == nil {
		t.Fatal("node has no resource manager allowlist")
	}
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/1")
	nt.WaitFor(10*time.Second, func() bool { return al.AllowedPeerAndMultiaddr(nt.ID(b), addr) },
		"node %d's allowlist to hold its contact node %d's address", a, b)
	if al.AllowedPeerAndMultiaddr(nt.ID(c), addr) {
		t.Fatalf("node %d (no contact) at its contact's address is allowlisted", c)
	}
	if _, err := nt.Node(a).Contacts().Revoke(context.Background(), nt.ID(b).String()); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool { return !al.Allowed(addr) },
		"node %d's allowlist to drop revoked node %d's address", a, b)
}
