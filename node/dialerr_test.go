package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A dial through a relay that refuses the circuit says, in one line, why
// and what to do, not libp2p's list of addresses and the relay protocol's
// status code. Before, parley connect printed
// "all dials failed\n  * [ADDR/p2p-circuit] error opening relay circuit:
// PERMISSION_DENIED (202)".
func TestRelayRefusedDialSaysWhy(t *testing.T) {
	const r, a, b = 0, 1, 2
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.Reachability = node.ReachabilityPublic // nobody reserves
		c.RelayService = i == r
	}))
	nt.Befriend(t, a, r)
	nt.BlockDirect(a, b)
	nt.WaitFor(10*time.Second, func() bool { return len(nt.Node(b).Host().Network().ConnsToPeer(nt.ID(a))) == 0 },
		"node %d to see its connection to node %d closed", b, a)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		to   peer.ID
		want string
	}{
		// Neither b nor the peer dialled is one the relay deals with.
		{"permission denied", nobody, "it relays only for the peers it deals with"},
		// a is the relay's contact, but holds no reservation there.
		{"no reservation", nt.ID(a), "that peer holds no reservation on it now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A connection b holds to the peer already would make the dial
			// a no-op: the premise is that there is none (nodes redial
			// their contacts' peers on their own).
			conns := func() []string {
				var out []string
				for _, c := range nt.Node(b).Host().Network().ConnsToPeer(tc.to) {
					out = append(out, c.RemoteMultiaddr().String())
				}
				return out
			}
			nt.WaitFor(10*time.Second, func() bool { return len(conns()) == 0 }, "node %d to hold no connection to the peer dialled (%v)", b, conns())
			// Another dial of the peer (a DHT query's) failed a moment
			// before, and left its addresses in the swarm's dial backoff:
			// the dial asked for still says why, not "dial backoff".
			ai := peer.AddrInfo{ID: tc.to, Addrs: circuitVia(nt, r)}
			if err := nt.Node(b).Host().Connect(ctx, ai); err == nil {
				t.Fatalf("the first dial through the relay worked (connections now: %v)", conns())
			}
			err := nt.Node(b).Connect(ctx, ai)
			if err == nil {
				t.Fatalf("the dial through the relay worked (connections now: %v)", conns())
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "/p2p-circuit") {
				t.Fatalf("error %q, want one line saying %q", msg, tc.want)
			}
		})
	}
}
