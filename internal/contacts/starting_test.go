package contacts_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/consent"
)

// TestRevocationReachesAPeerWhoseServiceStartsAfterItConnected: a node
// listens (and its contacts connect to it) before its contact service is
// up. What a contact had for it then, a revocation here, went unanswered;
// it is sent again as soon as the peer says it serves the protocol, not at
// the next retry minutes later.
func TestRevocationReachesAPeerWhoseServiceStartsAfterItConnected(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	befriend(t, nt, 0, 1, 0)

	// Node 0 "is starting": its contact protocol is not served yet.
	h := nt.Node(0).Host()
	h.RemoveStreamHandler(consent.ProtocolID)
	// Node 1 hears it is gone (identify's push), as a peer that connected
	// to a node still starting knows: a push that put it back before node
	// 1 heard it was gone would tell it nothing new.
	nt.WaitFor(15*time.Second, func() bool {
		ps, err := nt.Node(1).Host().Peerstore().SupportsProtocols(h.ID(), consent.ProtocolID)
		return err == nil && len(ps) == 0
	}, "node 1 to know node 0 serves no contact protocol")
	res, err := svc(nt, 1).Revoke(context.Background(), nt.ID(0).String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Delivered {
		t.Fatal("the revocation was delivered to a node that serves no contact protocol")
	}
	if s := state(nt, 0, 1); s != consent.StateActive {
		t.Fatalf("node 0 sees node 1 as %s before it could hear", s)
	}
	// Its service comes up: the revocation follows at once (the retry
	// interval is two minutes; waitState gives 15 s).
	h.SetStreamHandler(consent.ProtocolID, svc(nt, 0).Handler())
	waitState(t, nt, 0, 1, consent.StateRevoked)
}
