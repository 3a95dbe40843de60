package node_test

import (
	"testing"
	"time"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/node/nodetest"
)

// An organisation that trusts two others: its members' introduction holds
// both trusts, and a member of either organisation it trusts back approves
// its members' requests. Before, the deciding node kept one trust of the
// requester's organisation (the last in the introduction, by the trusted
// organisation's key) and refused as not trusted whenever that one named
// another organisation.
func TestOrgTrustingTwoOrganisations(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	const x1, y1 = 0, 1
	x, y := newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	z := newOrgKey(t, "Zco")
	for string(z.id) < string(y.id) { // Z's trust comes after Y's in X's introduction
		z = newOrgKey(t, "Zco")
	}
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(x1), Handle: "xavier"})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(y1), Handle: "yann"})
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: y.id, Scopes: []string{consent.ScopeAsk}})
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: z.id, Scopes: []string{consent.ScopeAsk}})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk}})

	request(t, nt, x1, y1)
	nt.WaitFor(20*time.Second, func() bool {
		return contactState(nt, y1, x1) == consent.StateActive ||
			counter(nt, y1, "parley_org_auto_approvals_total", "not_trusted") >= 1
	}, "node %d to decide the request", y1)
	if s := contactState(nt, y1, x1); s != consent.StateActive {
		t.Fatalf("X trusts Y and Z, Y trusts X: X's member's request is %q at Y's member, want active", s)
	}
}
