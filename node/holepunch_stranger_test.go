package node_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	hppb "github.com/libp2p/go-libp2p/p2p/protocol/holepunch/pb"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify"
	idpb "github.com/libp2p/go-libp2p/p2p/protocol/identify/pb"
	"github.com/libp2p/go-msgio/pbio"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A stranger that reaches a node behind a NAT through its relay (as any
// peer may, to ask to be a contact) steers no dial of the node. libp2p's
// hole punching (DCUtR) runs on every relayed connection that comes in:
// the node sends its public addresses and dials those the peer answers
// with, whatever they are (loopback ports of this machine, the LAN's
// hosts, any third party: hundreds fit in a message, each dialled up to
// three times), with no filter. Here the stranger first tells the node a
// public address of its own in identify's observed address (libp2p takes
// one observer's word for hole punching), so the node serves hole
// punching, then comes in through the relay and answers the node's
// CONNECT with a loopback port of this machine: the node dialled it.
func TestStrangerSteersNoHolePunchDial(t *testing.T) {
	const r, a = 0, 1
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
		switch i {
		case r:
			c.RelayService, c.RelayOpen = true, true
		case a:
			c.Reachability = node.ReachabilityPrivate
			c.Relays = c.Bootstrap // node r
		}
	}))
	nt.WaitRelayHeld(a, r)
	na := nt.Node(a)

	// A service of this machine's, which nobody should dial.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var probed atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			probed.Add(1)
			c.Close()
		}
	}()
	service := ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", l.Addr().(*net.TCPAddr).Port))

	var direct ma.Multiaddr
	for _, x := range na.Host().Network().ListenAddresses() {
		if _, err := x.ValueForProtocol(ma.P_TCP); err == nil {
			direct = x
		}
	}
	port, _ := direct.ValueForProtocol(ma.P_TCP)
	// A stranger connected directly tells the node, in identify, a public
	// address of its own; it stays connected (libp2p forgets an
	// observation with its connection).
	observed := ma.StringCast("/ip4/1.2.3.4/tcp/" + port)
	o := identifiedAs(t, observed)
	s := identifiedAs(t, observed)
	var asked atomic.Int32
	s.SetStreamHandler(holepunch.Protocol, func(str network.Stream) {
		defer str.Close()
		asked.Add(1)
		rd := pbio.NewDelimitedReader(str, 4096)
		wr := pbio.NewDelimitedWriter(str)
		var msg hppb.HolePunch
		if err := rd.ReadMsg(&msg); err != nil {
			return
		}
		_ = wr.WriteMsg(&hppb.HolePunch{Type: hppb.HolePunch_CONNECT.Enum(), ObsAddrs: [][]byte{service.Bytes()}})
		_ = rd.ReadMsg(&msg) // SYNC
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := o.Connect(ctx, peer.AddrInfo{ID: nt.ID(a), Addrs: []ma.Multiaddr{direct}}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		return slices.Contains(na.Host().Mux().Protocols(), protocol.ID(holepunch.Protocol))
	}, "node %d to serve hole punching", a)
	// The node starts hole punching once identify over the relayed
	// connection is done (a connection that came in just before the node
	// served it is dialled again), or refuses to.
	for try := 0; try < 3 && asked.Load() == 0 && punchesRefused(na) == 0; try++ {
		_ = s.Network().ClosePeer(nt.ID(a))
		s.Peerstore().ClearAddrs(nt.ID(a)) // through the relay alone
		if err := s.Connect(ctx, peer.AddrInfo{ID: nt.ID(a), Addrs: circuitVia(nt, r)}); err != nil {
			t.Fatalf("the stranger did not reach node %d through its relay: %v", a, err)
		}
		nodetest.Poll(7*time.Second, func() bool { return asked.Load() > 0 || punchesRefused(na) > 0 })
	}
	if asked.Load() == 0 && punchesRefused(na) == 0 {
		t.Fatalf("node %d never began hole punching with a peer that came in through its relay", a)
	}
	if nodetest.Poll(5*time.Second, func() bool { return probed.Load() > 0 }) {
		t.Fatalf("node %d dialled %s, an address a stranger named in hole punching (%d connections)", a, service, probed.Load())
	}
}

// punchesRefused is n's count of hole punches refused to peers it does
// not deal with.
func punchesRefused(n *node.Node) float64 {
	mfs, err := n.Registry().Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() != "parley_holepunch_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "refused" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// identifiedAs is a stranger's host on loopback whose identify tells
// each peer it was seen at observed.
func identifiedAs(t *testing.T, observed ma.Multiaddr) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	h.SetStreamHandler(identify.ID, func(str network.Stream) {
		defer str.Close()
		var listen [][]byte
		for _, x := range h.Addrs() {
			listen = append(listen, x.Bytes())
		}
		_ = pbio.NewDelimitedWriter(str).WriteMsg(&idpb.Identify{
			ObservedAddr: observed.Bytes(),
			ListenAddrs:  listen,
			Protocols:    []string{string(holepunch.Protocol), identify.ID},
		})
	})
	return h
}
