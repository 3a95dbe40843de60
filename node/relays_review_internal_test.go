package node

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/test"
	"github.com/prometheus/client_golang/prometheus"
)

// relayState bounds the relays it remembers: past 64 it drops those not
// held. But RelayState.Held is only ever set on the copies Relays() returns,
// never on the entries of reach.relays, so the bound drops every entry,
// the reservations the node holds (their Expires) and the configured
// relays' refusals with them: status then shows a held relay as not held,
// with no relayed address to give out, until it is asked again.
func TestReviewRelayStateBoundKeepsHeldReservations(t *testing.T) {
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
