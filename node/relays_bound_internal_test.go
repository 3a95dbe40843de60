package node

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/test"
	"github.com/prometheus/client_golang/prometheus"
)

// TestRelayStateBoundKeepsHeldReservations (found by a review): relayState
// bounds the relays it remembers. The bound once dropped every entry (it
// asked for Held, set only on the copies Relays() returns), the
// reservations the node holds with them; now it forgets one relay, the one
// asked longest ago that holds no reservation.
func TestRelayStateBoundKeepsHeldReservations(t *testing.T) {
	r := newReach(prometheus.NewRegistry())
	held, err := test.RandPeerID()
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(time.Hour)
	r.mu.Lock()
	r.relayState(held).Expires = end
	for range 64 {
		p, err := test.RandPeerID()
		if err != nil {
			t.Fatal(err)
		}
		st := r.relayState(p)
		st.Err, st.Failed = "refused (permission_denied)", time.Now()
	}
	extra, _ := test.RandPeerID()
	r.relayState(extra) // the 66th: the bound applies
	st, ok := r.relays[held]
	r.mu.Unlock()
	if !ok || !st.Expires.Equal(end) {
		t.Fatalf("the reservation held until %s was dropped by the bound on remembered relays (entry %v)", end.Format(time.RFC3339), ok)
	}
}
