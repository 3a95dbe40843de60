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

// A stranger in the node's DHT answers a lookup of a peer with as many
// addresses for it as fit in a message, and the node dials them all.
// Here it names 200 ports of this machine for the peer looked up; the
// node dialled each (a dial storm steered by any DHT server, and, with
// loopback and LAN addresses, a probe of the user's own network). Now it
// keeps at most maxDHTAddrs (16) of a peer's addresses from an answer.
func TestDHTAnswerSteersFewDials(t *testing.T) {
	st := steeringDHT(t, func(req, resp *dhtpb.Message, named *dhtpb.Message_Peer) {
		resp.CloserPeers = []*dhtpb.Message_Peer{named}
	})
	fctx, fcancel := context.WithTimeout(st.ctx, 10*time.Second)
	_, _ = st.na.DHT().FindPeer(fctx, st.target)
	fcancel()
	if n := st.dials(t); n == 0 {
		t.Fatal("node 0 dialled none of the addresses a DHT answer named")
	} else if n > steerMost {
		t.Fatalf("one DHT answer of a stranger's had node 0 dial %d addresses of the peer looked up (at most %d)", n, steerMost)
	}
}

// steerMost is how many of a peer's addresses a DHT answer may have dialled.
const steerMost = 16

// steered is node 0 of its own network, with a stranger in its DHT's
// routing table whose every answer names target at 200 ports of this
// machine, each counting the dials it takes.
type steered struct {
	ctx     context.Context
	na      *node.Node
	target  peer.ID
	dialled *atomic.Int32
}

// steeringDHT starts a steered node; answer puts the named peer (target
// and its 200 addresses) into the stranger's answer to req.
func steeringDHT(t *testing.T, answer func(req, resp *dhtpb.Message, named *dhtpb.Message_Peer)) *steered {
	t.Helper()
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic
	}))
	st := &steered{na: nt.Node(0), target: test.RandPeerIDFatal(t), dialled: new(atomic.Int32)}
	var addrs [][]byte
	for range 200 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				st.dialled.Add(1)
				c.Close()
			}
		}()
		addrs = append(addrs, ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", l.Addr().(*net.TCPAddr).Port)).Bytes())
	}
	s, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
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
			answer(&req, resp, &dhtpb.Message_Peer{Id: []byte(st.target), Addrs: addrs})
			if err := wr.WriteMsg(resp); err != nil {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	st.ctx = ctx
	if err := s.Connect(ctx, peer.AddrInfo{ID: nt.ID(0), Addrs: st.na.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool { return st.na.DHT().RoutingTable().Find(s.ID()) != "" },
		"the stranger to be in node 0's routing table")
	return st
}

// dials waits a while for more dials than steerMost, and returns how many
// the node made.
func (st *steered) dials(t *testing.T) int32 {
	nodetest.Poll(3*time.Second, func() bool { return st.dialled.Load() > steerMost })
	return st.dialled.Load()
}
