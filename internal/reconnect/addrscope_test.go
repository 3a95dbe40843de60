package reconnect

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/test"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// fakeConn is a connection as remember reads it: its remote address and
// direction.
type fakeConn struct {
	network.Conn
	remote ma.Multiaddr
	dir    network.Direction
}

func (c fakeConn) RemoteMultiaddr() ma.Multiaddr { return c.remote }
func (c fakeConn) Stat() network.ConnStats {
	return network.ConnStats{Stats: network.Stats{Direction: c.dir}}
}

// TestStoredAddressesKeepToTheConnectionsScope: a contact reached on a
// public address announces, in identify, addresses on this user's own
// machine and LAN (loopback ports of local services, the router's admin
// port). libp2p's identify keeps only a peer's public addresses when the
// connection is public (its filterAddrs), but the event it emits carries
// the raw list, and remember stored that: at every start the node put
// them in the peerstore and dialled each, a probe of the user's machine
// and LAN steered by the contact. Now remember keeps what identify keeps:
// over a public connection public addresses alone, over a private one no
// loopback.
func TestStoredAddressesKeepToTheConnectionsScope(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := test.RandPeerIDFatal(t)
	s := &Service{cfg: Config{Store: db}, log: slog.New(slog.DiscardHandler), m: newMetrics(nil)}
	public := ma.StringCast("/ip4/1.2.3.4/tcp/4190")
	inside := []ma.Multiaddr{
		ma.StringCast("/ip4/127.0.0.1/tcp/22"),
		ma.StringCast("/ip4/192.168.1.1/tcp/80"),
		ma.StringCast("/ip4/10.0.0.5/udp/4190/quic-v1"),
		ma.StringCast("/ip6/::1/tcp/631"),
	}
	for _, tc := range []struct {
		name   string
		remote ma.Multiaddr
		bad    []ma.Multiaddr
	}{
		{"public", public, inside},
		{"private", ma.StringCast("/ip4/192.168.1.20/tcp/4190"), []ma.Multiaddr{inside[0], inside[3]}},
	} {
		st := &peerState{}
		c := fakeConn{remote: tc.remote, dir: network.DirOutbound}
		s.remember(p, st, c, append([]ma.Multiaddr{public}, inside...))
		v, ok, err := db.Lookup(schema.PeerAddrs([]byte(p)))
		if err != nil || !ok {
			t.Fatalf("%s: no record stored (%v)", tc.name, err)
		}
		_, addrs, err := decodeRecord(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			for _, b := range tc.bad {
				if a.Equal(b) {
					t.Errorf("%s connection from %s: the stored record keeps %s, dialled at every start: %v", tc.name, tc.remote, a, addrs)
				}
			}
		}
	}
}
