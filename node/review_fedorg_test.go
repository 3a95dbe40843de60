package node_test

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/test"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/org"
)

// TestReviewForeignRevocationsFillUpAndShutOutTheNext: a node of Y, which
// trusts X, keeps every revocation of X's members it is passed, for good,
// and refuses any past org.MaxForeignRevocations (4096). Revocations of
// members whose certificates expired long ago (years of X's leavers) are
// never let go, so once X has revoked 4096 members, the next revocation,
// of a member whose certificate still holds, is refused: that ex-member's
// old certificate still gets it approved without the user by Y's nodes
// (CheckCard, decide).
func TestReviewForeignRevocationsFillUpAndShutOutTheNext(t *testing.T) {
	nt, x, _ := trustingPair(t)
	const x1, y1 = 0, 1
	nt.Befriend(t, x1, y1) // x1 passes X's revocations on to its contact y1
	// Years of leavers: their certificates ended long ago, and so did the
	// need to remember their revocations.
	var batch [][]byte
	push := func() {
		t.Helper()
		if op := orgExchange(t, nt, x1, y1, 'p', batch); op != 'a' {
			t.Fatalf("node %d refused a push of X's revocations (answer %q)", y1, op)
		}
		batch = batch[:0]
	}
	for range org.MaxForeignRevocations {
		p, err := test.RandPeerID()
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, x.seal(t, consent.OrgRecord{Kind: consent.OrgRevoke, Subject: p}))
		if len(batch) == 64 {
			push()
		}
	}
	if len(batch) > 0 {
		push()
	}

	// A member leaves X today; its certificate holds for another day.
	ex, err := test.RandPeerID()
	if err != nil {
		t.Fatal(err)
	}
	cert := x.seal(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: ex, Handle: "eve"})
	batch = append(batch, x.seal(t, consent.OrgRecord{Kind: consent.OrgRevoke, Subject: ex}))
	orgExchange(t, nt, x1, y1, 'p', batch)
	if _, err := nt.Node(y1).Org().CheckCard(ex, cert); err == nil {
		t.Fatalf("node %d takes the certificate of a member X revoked (refused too_many: %v): it holds every revocation of X's ever passed, those of certificates long expired too, and takes no more",
			y1, counter(nt, y1, "parley_org_records_refused_total", "too_many"))
	}
}
