package consent

import (
	"errors"
	"testing"
	"time"
)

// TestConsentStrangerRevocationMakesItKnown: a stranger with a fresh key
// asks, then revokes its own pending request. The book keeps it for good
// (revoked, not a waiting request: neither the strangers' cap nor the TTL
// drops it), and its next request counts as a known peer's: a handful of
// fresh keys fill MaxPendingKnown, and the request of a peer the user
// really knows (a room member) is refused. Before, the entry was kept and
// the known peer refused; now the revocation drops the stranger's request
// as an expiry does, and its next request is a stranger's again.
func TestConsentStrangerRevocationMakesItKnown(t *testing.T) {
	const known = 3
	pol := Policy{MaxPendingIn: 2, MaxPendingKnown: known}
	target := newNode(t, pol)
	now := t0
	var ss []*tnode
	for range known {
		s := newNode(t, Policy{})
		ss = append(ss, s)
		wire, _, err := s.book.OutgoingRequest(target.id, "mallory", "hi", now)
		if err != nil {
			t.Fatal(err)
		}
		_, recs, err := target.book.IncomingRequest(s.id, wire, false, now)
		target.must(recs, err)
		rev, err := NewRevocation(s.priv, target.id, 0, 1, now)
		if err != nil {
			t.Fatal(err)
		}
		_, recs, err = target.book.ApplyRevocation(rev, now)
		target.must(recs, err)
	}
	// The TTL drops waiting requests, not these entries.
	now = now.Add(DefaultPendingTTL + time.Hour)
	recs, err := target.book.Expire(now)
	target.must(recs, err)
	for i, s := range ss {
		if c, ok := target.book.Get(s.id, now); ok {
			t.Fatalf("stranger %d: an entry (%s) outlives the revocation of its own request", i, c.State)
		}
		// The stranger asks again (no cool-down) and is taken as a peer
		// the user knows.
		wire, _, err := s.book.OutgoingRequest(target.id, "mallory", "hi again", now)
		if err != nil {
			t.Fatal(err)
		}
		c, recs, err := target.book.IncomingRequest(s.id, wire, false, now)
		target.must(recs, err)
		if c.Known {
			t.Errorf("stranger %d's second request counts as a known peer's", i)
		}
	}
	// A room member (known to the user) asks now.
	friend := newNode(t, Policy{})
	wire, _, err := friend.book.OutgoingRequest(target.id, "friend", "we share a room", now)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = target.book.IncomingRequest(friend.id, wire, true, now)
	if errors.Is(err, ErrTooManyPending) {
		t.Fatalf("a known peer's request is refused after %d strangers asked, revoked and asked again: %v", known, err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestConsentStrangerEntriesAreBounded: strangers that ask and revoke
// leave no entry past the strangers' cap (MaxPendingIn): each is a stranger
// the user never dealt with. Before, each left a revoked entry for good;
// now the revocation drops the request and nothing stays.
func TestConsentStrangerEntriesAreBounded(t *testing.T) {
	pol := Policy{MaxPendingIn: 5}
	target := newNode(t, pol)
	const strangers = 50
	for range strangers {
		s := newNode(t, Policy{})
		wire, _, err := s.book.OutgoingRequest(target.id, "mallory", "hi", t0)
		if err != nil {
			t.Fatal(err)
		}
		_, recs, err := target.book.IncomingRequest(s.id, wire, false, t0)
		target.must(recs, err)
		rev, err := NewRevocation(s.priv, target.id, 0, 1, t0)
		if err != nil {
			t.Fatal(err)
		}
		_, recs, err = target.book.ApplyRevocation(rev, t0)
		target.must(recs, err)
	}
	if n := len(target.book.List(t0)); n > pol.MaxPendingIn {
		t.Fatalf("%d strangers that asked and revoked leave %d entries in the book (and the store: %d records), more than MaxPendingIn %d",
			strangers, n, len(target.store), pol.MaxPendingIn)
	}
}
