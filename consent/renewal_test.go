package consent

import (
	"testing"
	"time"
)

// TestConsentRenewalNeedsTheRequestersUser: a contact's certificate ran
// out a year ago. The approver's node alone (no request of the other's
// user since) sends a "renewal" granting every scope for a thousand years,
// and the requester's node countersigns it: the contact is active again,
// for good, with no decision of the requester's user. Bilateral consent
// holds for a renewal only if the requester's side asks for it (its user,
// or a renewal it asked for within the certificate's life) and bounds
// what it signs. Before, the renewal was countersigned; now Countersign
// renews alone only a live contact, with scopes no wider and an end capped.
func TestConsentRenewalNeedsTheRequestersUser(t *testing.T) {
	req, appr := newNode(t, Policy{}), newNode(t, Policy{})
	connect(t, req, appr, t0, 30*24*time.Hour)
	later := t0.Add(400 * 24 * time.Hour)
	if st := stateOf(t, req, appr.id, later); st != StateExpired {
		t.Fatalf("the contact is %s a year on, want expired", st)
	}
	payload, err := NewCertPayload(appr.id, req.id, []string{ScopeAsk, ScopeInvite, ScopePresence, "admin"},
		later.Add(-time.Minute), later.AddDate(1000, 0, 0), nextSeq(0, later))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := SignCert(appr.priv, payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := req.book.Countersign(appr.id, "", payload, sig, later); err == nil {
		c, _ := req.book.Get(appr.id, later)
		t.Fatalf("the requester's node countersigned the approver's renewal alone, a year after the contact ended: %s until %s, scopes %v",
			c.State, c.Expires.UTC().Format(time.DateOnly), c.Scopes)
	}
}
