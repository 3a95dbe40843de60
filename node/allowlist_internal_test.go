package node

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/test"
	ma "github.com/multiformats/go-multiaddr"
)

// The allowlist is bounded: a few addresses a peer (public ones first,
// relayed ones never), a total cap past which the last peers have none,
// and a peer that is no longer wanted loses its entries.
func TestAllowlistIsBounded(t *testing.T) {
	h, err := libp2p.New(libp2p.NoListenAddrs, libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	const peers, each = allowTotal/allowPerPeer + 10, 10
	var ids []peer.ID
	for i := range peers {
		p := test.RandPeerIDFatal(t)
		ids = append(ids, p)
		var addrs []ma.Multiaddr
		for j := range each {
			addrs = append(addrs, ma.StringCast(fmt.Sprintf("/ip4/10.%d.%d.%d/tcp/4001", i/250, i%250, j)))
		}
		addrs = append(addrs,
			ma.StringCast(fmt.Sprintf("/ip4/203.0.%d.%d/tcp/4001", i/250, i%250)),
			ma.StringCast("/ip4/198.51.100.1/tcp/4001/p2p/"+test.RandPeerIDFatal(t).String()+"/p2p-circuit"))
		h.Peerstore().AddAddrs(p, addrs, time.Hour)
	}
	wanted := ids
	k := newAllowKeeper(h, func() []peer.ID { return wanted })
	if k == nil {
		t.Fatal("no allowlist")
	}
	k.update()
	total := 0
	for _, p := range ids {
		total += len(k.held[p])
		if n := len(k.held[p]); n > allowPerPeer {
			t.Fatalf("peer holds %d addresses, over %d", n, allowPerPeer)
		}
	}
	if total != allowTotal {
		t.Fatalf("allowlist holds %d addresses, want the cap %d", total, allowTotal)
	}
	if n := len(k.held[ids[len(ids)-1]]); n != 0 {
		t.Fatalf("the last peer, past the cap, holds %d addresses", n)
	}
	first := k.held[ids[0]]
	if len(first) != allowPerPeer || !first[0].Is4() || first[0] != netip.MustParseAddr("203.0.0.0") {
		t.Fatalf("first peer's addresses %v: want its public one first", first)
	}
	if !k.al.AllowedPeerAndMultiaddr(ids[0], ma.StringCast("/ip4/203.0.0.0/tcp/1")) {
		t.Fatal("first peer's public address not allowlisted")
	}
	if k.al.Allowed(ma.StringCast("/ip4/198.51.100.1/tcp/1")) {
		t.Fatal("a relay's address is allowlisted for the peers it relays")
	}
	wanted = ids[1:]
	k.update()
	if k.al.Allowed(ma.StringCast("/ip4/203.0.0.0/tcp/1")) || len(k.held[ids[0]]) != 0 {
		t.Fatal("a peer no longer wanted keeps its address in the allowlist")
	}
}
