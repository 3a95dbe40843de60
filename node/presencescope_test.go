package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A contact whose certificate does not grant the presence scope ("see what
// the other peer's agents are working on", consent.ScopePresence) must not
// be sent presence: `parley org trust ORGKEY --scopes ask` is the user's
// way to let another organisation's members ask without seeing what the
// agents work on. Before, presence went to every active contact whatever
// its certificate granted, so the contact's `parley who` showed the
// agent's working_on and role (found by a review).
func TestPresenceFollowsTheCertificatesScopes(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	const x1, y1 = 0, 1
	x, y := newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(x1), Handle: "xavier"})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(y1), Handle: "yann"})
	// Y lets X's members ask, nothing more; X would grant everything.
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk}})
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: y.id,
		Scopes: []string{consent.ScopeAsk, consent.ScopeInvite, consent.ScopePresence}})
	request(t, nt, x1, y1)
	nt.WaitFor(20*time.Second, func() bool {
		return contactState(nt, x1, y1) == consent.StateActive && contactState(nt, y1, x1) == consent.StateActive
	}, "the trusted request to be approved")
	c, _ := nt.Node(y1).Contacts().Book().Get(nt.ID(x1), time.Now())
	if slices.Contains(c.Scopes, consent.ScopePresence) {
		t.Fatalf("certificate scopes %v: want no presence scope", c.Scopes)
	}

	ctx := context.Background()
	if _, err := nt.Node(y1).Agents().Register(ctx, agents.RegisterRequest{
		Name: "coder", Role: "lead", WorkingOn: "the acquisition of Zco", TTLSeconds: 600,
	}); err != nil {
		t.Fatal(err)
	}
	// Presence goes to a new contact at once; give it ample time.
	var seen agents.WhoEntry
	leaked := nodetest.Poll(10*time.Second, func() bool {
		for _, e := range nt.Node(x1).Agents().Who(ctx) {
			if e.PeerID == nt.ID(y1).String() && e.Agent == "coder" {
				seen = e
				return true
			}
		}
		return false
	})
	if leaked {
		t.Fatalf("a contact whose certificate grants %v sees y1's agent: state %q, working on %q, role %q",
			c.Scopes, seen.State, seen.WorkingOn, seen.Role)
	}
}
