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
	es, err := audit.List(nt.Home(0), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range es {
		if e.Action == audit.ContactRevoke && e.Subject == nt.ID(1).String() && strings.Contains(e.Detail["restored"], nt.ID(1).String()) {
			found = true
		}
	}
	if !found {
		t.Fatalf("A's audit log does not say it took back its revocation of B: %+v", es)
	}

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
// they hold when they connect, and A takes both back (its own signature is
// on each), says so in its audit log, and keeps them across a restart.
func TestContactsComeBackToAnOldCopyOfTheHome(t *testing.T) {
	nt := startNet(t, 3)
	waitConnected(t, nt, 0, 1)
	waitConnected(t, nt, 0, 2)
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
	waitState(t, nt, 0, 1, consent.StateActive)
	waitState(t, nt, 0, 2, consent.StateActive)
	for _, j := range []int{1, 2} {
		if err := svc(nt, 0).Allowed(nt.ID(j)); err != nil {
			t.Fatalf("A does not allow node %d: %v", j, err)
		}
	}
	nt.WaitFor(10*time.Second, func() bool {
		es, err := audit.List(nt.Home(0), time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		taken := map[string]bool{}
		for _, e := range es {
			if e.Action == audit.ContactApprove && e.Detail["restored"] != "" {
				taken[e.Subject] = true
			}
		}
		return len(taken) == 2 && taken[nt.ID(1).String()] && taken[nt.ID(2).String()]
	}, "A's audit log to say it took back both certificates")
	nt.Crash(0)
	nt.Restart(0)
	for _, j := range []int{1, 2} {
		if s := state(nt, 0, j); s != consent.StateActive {
			t.Fatalf("after a restart A sees node %d as %s", j, s)
		}
	}
}
