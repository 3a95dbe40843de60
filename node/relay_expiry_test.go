package node_test

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	pbv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	"github.com/libp2p/go-msgio/pbio"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestRelayReservationEndIsCappedByOwnClock: before, the node recorded a
// reservation's end as the relay said, so a relay whose clock runs ahead
// (here: 30 days, or a relay that lies) had the node show the reservation
// held, give out addresses through it and neither ask again nor renew it
// long after the relay, by its own term, dropped it; now the node takes
// the end no later than libp2p's term (an hour) from the answer by its own
// clock, and renews it in time.
func TestRelayReservationEndIsCappedByOwnClock(t *testing.T) {
	liar, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { liar.Close() })
	const ahead = 30 * 24 * time.Hour
	liar.SetStreamHandler("/libp2p/circuit/relay/0.2.0/hop", func(s network.Stream) {
		defer s.Close()
		rd := pbio.NewDelimitedReader(s, 4096)
		var msg pbv2.HopMessage
		if err := rd.ReadMsg(&msg); err != nil || msg.GetType() != pbv2.HopMessage_RESERVE {
			_ = s.Reset()
			return
		}
		expire := uint64(time.Now().Add(time.Hour + ahead).Unix())
		var addrs [][]byte
		for _, a := range liar.Addrs() {
			addrs = append(addrs, a.Bytes())
		}
		_ = pbio.NewDelimitedWriter(s).WriteMsg(&pbv2.HopMessage{
			Type:        pbv2.HopMessage_STATUS.Enum(),
			Status:      pbv2.Status_OK.Enum(),
			Reservation: &pbv2.Reservation{Expire: &expire, Addrs: addrs},
		})
	})
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) {
		c.Reachability = node.ReachabilityPrivate
		c.Relays = []peer.AddrInfo{{ID: liar.ID(), Addrs: liar.Addrs()}}
	}))
	var st node.RelayState
	nt.WaitFor(30*time.Second, func() bool {
		for _, s := range nt.Node(0).Relays() {
			if s.Relay == liar.ID() && s.Held {
				st = s
				return true
			}
		}
		return false
	}, "the node to hold a reservation on the relay")
	if limit := time.Now().Add(time.Hour + time.Minute); st.Expires.After(limit) {
		t.Fatalf("the node takes its reservation as held until %s (the relay's word), past any term it was granted by its own clock (%s): it renews it only then",
			st.Expires.UTC().Format(time.RFC3339), limit.UTC().Format(time.RFC3339))
	}
}
