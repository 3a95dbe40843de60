package contacts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/audit"
)

// TestRevocationsOutliveAnOldCopyOfTheHome: node A's data is restored from
// a copy taken while B and C were its contacts. Since the copy, A revoked
// B and C revoked A. Started on the copy, A would list both as contacts;
// B shows A's own revocation back and C sends its own again, so A ends with
// both revoked, as decided, and its audit log says which it took back.
func TestRevocationsOutliveAnOldCopyOfTheHome(t *testing.T) {
	nt := startNet(t, 3)
	waitConnected(t, nt, 0, 1)
	waitConnected(t, nt, 0, 2)
	befriend(t, nt, 0, 1, 0)
	befriend(t, nt, 0, 2, 0)
	nt.Crash(0)
	old := nt.CopyData(0)
	nt.Restart(0)
	waitConnected(t, nt, 0, 1)
	waitConnected(t, nt, 0, 2)

	ctx := context.Background()
	if res, err := svc(nt, 0).Revoke(ctx, nt.ID(1).String()); err != nil || !res.Delivered {
		t.Fatalf("A revokes B: %+v, %v", res, err)
	}
	if res, err := svc(nt, 2).Revoke(ctx, nt.ID(0).String()); err != nil || !res.Delivered {
		t.Fatalf("C revokes A: %+v, %v", res, err)
	}
	waitState(t, nt, 1, 0, consent.StateRevoked)
	waitState(t, nt, 0, 2, consent.StateRevoked)

	nt.Crash(0)
	nt.RestoreData(0, old)
	nt.Restart(0)
	// The copy's contacts come back active, then the peers put A right.
	waitState(t, nt, 0, 1, consent.StateRevoked)
	waitState(t, nt, 0, 2, consent.StateRevoked)
	c, _ := svc(nt, 0).Book().Get(nt.ID(1), time.Now())
	if c.Revocation == nil || c.RevokeSeq == 0 {
		t.Fatalf("A holds no revocation of B after taking its own back: %+v", c)
	}
	// B's revocation stays A's own: A sends it again, and B refuses the
	// replay, still revoked.
	if err := svc(nt, 1).Allowed(nt.ID(0)); err == nil {
		t.Fatal("B allows A")
	}
	// The record is written just after the revocation is taken back, which
	// the state above already shows.
	nt.WaitFor(10*time.Second, func() bool {
		es, err := audit.List(nt.Home(0), time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Action == audit.ContactRevoke && e.Subject == nt.ID(1).String() && strings.Contains(e.Detail["restored"], nt.ID(1).String()) {
				return true
			}
		}
		return false
	}, "A's audit log to say it took back its revocation of B")

	// Restarted again (its data as it now is), A keeps both revoked.
	nt.Crash(0)
	nt.Restart(0)
	for _, j := range []int{1, 2} {
		if s := state(nt, 0, j); s != consent.StateRevoked {
			t.Fatalf("after a restart A sees node %d as %s", j, s)
		}
	}
}

// TestContactsComeBackToAnOldCopyOfTheHome: node A's data is restored from
// a copy taken before B approved it (A asked) and before A approved C (C
// asked). Started on the copy, A knows neither; each shows A the certificate
// they hold when they connect, and A holds it as a pending request for its
// user (a peer revoked since the copy could show its certificate too): the
// user approves B, which is a contact again at once with no new exchange,
// and denies C, which revokes C on both sides. The audit log says which.
func TestContactsComeBackToAnOldCopyOfTheHome(t *testing.T) {
	nt := startNet(t, 3)
	waitConnected(t, nt, 0, 1)
	nt.Crash(0)
	old := nt.CopyData(0)
	nt.Restart(0)
	nt.ConnectAll()
	befriend(t, nt, 0, 1, 0)
	befriend(t, nt, 2, 0, 0)

	nt.Crash(0)
	nt.RestoreData(0, old)
	nt.Restart(0)
	nt.ConnectAll()
	waitState(t, nt, 0, 1, consent.StatePendingIn)
	waitState(t, nt, 0, 2, consent.StatePendingIn)
	for _, j := range []int{1, 2} {
		if err := svc(nt, 0).Allowed(nt.ID(j)); err == nil {
			t.Fatalf("A allows node %d before its user decided", j)
		}
	}
	ctx := context.Background()
	res, err := svc(nt, 0).Approve(ctx, nt.ID(1).String(), 0)
	if err != nil || !res.Delivered {
		t.Fatalf("approve B's certificate: %+v %v", res, err)
	}
	if err := svc(nt, 0).Allowed(nt.ID(1)); err != nil {
		t.Fatalf("A does not allow B after approving: %v", err)
	}
	if s := state(nt, 1, 0); s != consent.StateActive {
		t.Fatalf("B sees A as %s", s)
	}
	if res, err := svc(nt, 0).Deny(ctx, nt.ID(2).String()); err != nil || !res.Delivered {
		t.Fatalf("deny C's certificate: %+v %v", res, err)
	}
	waitState(t, nt, 2, 0, consent.StateRevoked)
	if s := state(nt, 0, 2); s != consent.StateRevoked {
		t.Fatalf("A sees C as %s after denying its certificate", s)
	}
	nt.WaitFor(10*time.Second, func() bool {
		es, err := audit.List(nt.Home(0), time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		shown, approved := map[string]bool{}, false
		for _, e := range es {
			if e.Action == audit.ContactRequest && e.Detail["shown_cert"] != "" {
				shown[e.Subject] = true
			}
			if e.Action == audit.ContactApprove && e.Subject == nt.ID(1).String() && e.Detail["restored"] != "" {
				approved = true
			}
		}
		return len(shown) == 2 && approved
	}, "A's audit log to say both showed certificates back and B's was approved")
	nt.Crash(0)
	nt.Restart(0)
	if s := state(nt, 0, 1); s != consent.StateActive {
		t.Fatalf("after a restart A sees B as %s", s)
	}
}
