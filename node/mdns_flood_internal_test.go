package node

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/test"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/internal/poll"
)

// A host on the LAN that floods mDNS answers, each naming a fresh peer ID
// at an address that takes the connection and never answers, does not
// have the node dial them all at once. Before, each answer started a dial
// of its own (10 s each, no bound): hundreds at once held the swarm's
// dials of file descriptors (160 in all), so the node's own dials of its
// contacts queued behind them, and goroutines grew with the flood. Now at
// most mdnsDials run at once, and an answer past that is dropped.
func TestMDNSFloodDialsFewAtOnce(t *testing.T) {
	n, err := New(Config{
		Home:         filepath.Join(t.TempDir(), "n"),
		ListenAddrs:  []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/0")},
		Reachability: ReachabilityPublic,
		NoLocalAPI:   true,
		NoUI:         true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var open, most atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			k := open.Add(1)
			for {
				m := most.Load()
				if k <= m || most.CompareAndSwap(m, k) {
					break
				}
			}
			go func() {
				defer c.Close()
				defer open.Add(-1)
				_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
				_, _ = c.Read(make([]byte, 1<<16)) // says nothing back
				for {
					if _, err := c.Read(make([]byte, 1<<16)); err != nil {
						return
					}
				}
			}()
		}
	}()
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/" + func() string { _, p, _ := net.SplitHostPort(l.Addr().String()); return p }())
	notifee := newMDNSNotifee(n)
	const flood = 300
	for range flood {
		notifee.HandlePeerFound(peer.AddrInfo{ID: test.RandPeerIDFatal(t), Addrs: []ma.Multiaddr{addr}})
	}
	poll.Until(2*time.Second, func() bool { return most.Load() > mdnsDials })
	if m := most.Load(); m > mdnsDials {
		t.Fatalf("%d mDNS answers of fresh peer IDs had the node dial %d at once (at most %d)", flood, m, mdnsDials)
	}
}
