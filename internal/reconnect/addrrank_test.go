package reconnect

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/test"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/internal/poll"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// TestStoredRecordKeepsTheRelayedAddress: before, remember kept the first
// MaxAddrs (16) addresses in announced order, so a contact behind a NAT
// that announces its private addresses (a developer's laptop: loopback,
// LAN, Docker bridges, a VPN, each over TCP and QUIC) and, last, the
// relayed address that is its only way in from outside lost that address:
// after a restart the node knew only addresses it cannot reach the contact
// on; now remember ranks relayed and public addresses first, then the
// dialled one, then private ones, before it cuts.
func TestStoredRecordKeepsTheRelayedAddress(t *testing.T) {
	relay, err := test.RandPeerID()
	if err != nil {
		t.Fatal(err)
	}
	relayed := ma.StringCast(fmt.Sprintf("/ip4/203.0.113.7/tcp/4001/p2p/%s/p2p-circuit", relay))
	var private []ma.Multiaddr
	for i := range 8 {
		private = append(private,
			ma.StringCast(fmt.Sprintf("/ip4/172.%d.0.1/tcp/4190", 17+i)),
			ma.StringCast(fmt.Sprintf("/ip4/172.%d.0.1/udp/4190/quic-v1", 17+i)))
	}
	b2, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay(),
		libp2p.AddrsFactory(func(own []ma.Multiaddr) []ma.Multiaddr {
			return append(append(slices.Clone(own), private...), relayed)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	ctx, a, db := runService(t, b2.ID())
	if err := a.Connect(ctx, peer.AddrInfo{ID: b2.ID(), Addrs: b2.Network().ListenAddresses()}); err != nil {
		t.Fatal(err)
	}
	var addrs []ma.Multiaddr
	if !poll.Until(10*time.Second, func() bool {
		v, ok, err := db.Lookup(schema.PeerAddrs([]byte(b2.ID())))
		if err != nil || !ok {
			return false
		}
		_, addrs, err = decodeRecord(v)
		return err == nil && len(addrs) > 1
	}) {
		t.Fatal("no address record stored for the contact")
	}
	if !slices.ContainsFunc(addrs, func(x ma.Multiaddr) bool { return x.Equal(relayed) }) {
		t.Fatalf("the stored record (%d addresses) lost the contact's relayed address %s, its only way in: %v", len(addrs), relayed, addrs)
	}
}

// runService runs a reconnect Service on a new loopback host with a store
// of its own, its one contact target, until the test ends; it returns the
// context it runs in, its host and its store.
func runService(t *testing.T, target peer.ID) (context.Context, host.Host, *store.DB) {
	t.Helper()
	a, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	db, err := store.Open(filepath.Join(t.TempDir(), "data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(Config{Host: a, Store: db, Peers: func() []peer.ID { return []peer.ID{target} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ctx, a, db
}
