package node_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/test"
	"github.com/libp2p/go-msgio/pbio"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A stranger in the node's DHT answers a provider lookup (a find's
// cap:go) with one provider and as many addresses for it as fit in a
// message. The DHT keeps at most maxDHTAddrs of them (capDHTAddrs), but
// the find took the answer's provider as it came and put every address in
// the peerstore before it asked the provider for its cards: 200 ports of
// this machine dialled, and as many addresses held per provider, 200
// providers a query.
func TestProviderAnswerSteersFewDials(t *testing.T) {
	const a = 0
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
	}))
	na := nt.Node(a)
	var dialled atomic.Int32
	var addrs [][]byte
	const ports = 200
	for range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				dialled.Add(1)
				c.Close()
			}
		}()
		addrs = append(addrs, ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", l.Addr().(*net.TCPAddr).Port)).Bytes())
	}
	target := test.RandPeerIDFatal(t)
	s, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetStreamHandler("/parley/kad/1.0.0", func(str network.Stream) {
		defer str.Close()
		rd := pbio.NewDelimitedReader(str, 4<<20)
		wr := pbio.NewDelimitedWriter(str)
		for {
			var req dhtpb.Message
			if err := rd.ReadMsg(&req); err != nil {
				return
			}
			resp := &dhtpb.Message{Type: req.Type, Key: req.Key}
			if req.GetType() == dhtpb.Message_GET_PROVIDERS {
				resp.ProviderPeers = []*dhtpb.Message_Peer{{Id: []byte(target), Addrs: addrs}}
			}
			if err := wr.WriteMsg(resp); err != nil {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Connect(ctx, peer.AddrInfo{ID: nt.ID(a), Addrs: na.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool { return na.DHT().RoutingTable().Find(s.ID()) != "" },
		"the stranger to be in node %d's routing table", a)
	if _, err := na.Agents().Search(ctx, "cap:go"); err != nil {
		t.Fatal(err)
	}
	const most = 16
	nodetest.Poll(3*time.Second, func() bool { return dialled.Load() > most })
	if dialled.Load() == 0 {
		t.Fatalf("node %d dialled none of the addresses the provider answer named", a)
	}
	if n := dialled.Load(); n > most {
		t.Fatalf("one provider answer of a stranger's had node %d dial %d addresses of the provider (at most %d)", a, n, most)
	}
	if n := len(na.Host().Peerstore().Addrs(target)); n > most {
		t.Fatalf("node %d keeps %d addresses of the provider (at most %d)", a, n, most)
	}
}
