package reconnect

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/internal/poll"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// TestAddressRecordStaysUnderTheValueLog: a contact (a modified build)
// announces long addresses (dns names of some 400 bytes, one past
// maxAddrLen) and new ones at each of its connections. Before, the node
// stored them as they came: a record of several KiB went to Badger's value
// log, whose space the store never reclaims, so a contact that reconnected
// with ever new addresses grew the node's disk by that much each time
// with no event stored; and a record holding an address over maxAddrLen
// was refused at the next start (decodeRecord), so the contact's
// addresses were lost. Now a record holds no address over maxAddrLen and
// stays under store.ValueThreshold (an overwritten one is compacted away).
func TestAddressRecordStaysUnderTheValueLog(t *testing.T) {
	if maxRecordWire >= store.ValueThreshold {
		t.Fatalf("maxRecordWire %d is not under the store's value threshold %d", maxRecordWire, store.ValueThreshold)
	}
	var round atomic.Int64
	long := func(i int) ma.Multiaddr {
		name := fmt.Sprintf("r%d-a%d-%s.example", round.Load(), i, strings.Repeat("x", 380))
		if i == 0 {
			name += strings.Repeat("y", 200) // past maxAddrLen
		}
		return ma.StringCast(fmt.Sprintf("/dns4/%s/tcp/4001", name))
	}
	b, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay(),
		libp2p.AddrsFactory(func(own []ma.Multiaddr) []ma.Multiaddr {
			out := []ma.Multiaddr{}
			for i := range MaxAddrs {
				out = append(out, long(i))
			}
			return append(out, own...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, a, db := runService(t, b.ID())
	const rounds = 5
	written := 0
	for r := range rounds {
		round.Store(int64(r))
		_ = b.Network().ClosePeer(a.ID())
		if err := b.Connect(ctx, peer.AddrInfo{ID: a.ID(), Addrs: a.Addrs()}); err != nil {
			t.Fatal(err)
		}
		var v []byte
		if !poll.Until(10*time.Second, func() bool {
			got, ok, err := db.Lookup(schema.PeerAddrs([]byte(b.ID())))
			v = got
			return err == nil && ok && strings.Contains(string(got), fmt.Sprintf("r%d-", r))
		}) {
			t.Fatalf("round %d: the contact's new addresses were not stored", r)
		}
		written += len(v)
		if _, _, err := decodeRecord(v); err != nil {
			t.Fatalf("round %d: the stored record (%d bytes) cannot be read back at the next start: %v", r, len(v), err)
		}
		if len(v) >= store.ValueThreshold {
			t.Fatalf("round %d: a record of %d bytes (value log from %d; %d bytes there after %d reconnections, never reclaimed)",
				r, len(v), store.ValueThreshold, written, r+1)
		}
	}
}
