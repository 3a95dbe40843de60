package consent

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

func TestHandshakeOverFrames(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	var stream bytes.Buffer
	send := func(m Message) *Message {
		t.Helper()
		if err := WriteFrame(&stream, m); err != nil {
			t.Fatal(err)
		}
		b, err := ReadFrame(&stream, MaxFrame)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	wire, recs, err := alice.book.OutgoingRequest(bob.id, "Alice", "let's pair on the parser", t0)
	alice.must(recs, err)
	wantState(t, alice, bob.id, t0, StatePendingOut)
	m := send(Message{Kind: KindRequest, Request: wire})
	c, recs, err := bob.book.IncomingRequest(alice.id, m.Request, false, t0)
	bob.must(recs, err)
	if c.Handle != "Alice" || c.Note != "let's pair on the parser" || c.State != StatePendingIn {
		t.Fatalf("incoming contact %+v", c)
	}
	send(Message{Kind: KindAck, ID: c.ID})
	for _, n := range []*tnode{alice, bob} {
		wantErr(t, n.book.Allowed(other(n, alice, bob), t0), ErrNoContact)
	}

	a, recs, err := bob.book.Approve(c.ID, 0, t0)
	bob.must(recs, err)
	m = send(Message{Kind: KindApprove, ID: a.ID, Payload: a.Payload, Sig: a.Sig, Handle: "Bob"})
	wantErr(t, bob.book.Allowed(alice.id, t0), ErrNoContact) // not before the countersignature
	sig, recs, err := alice.book.Countersign(bob.id, m.Handle, m.Payload, m.Sig, t0)
	alice.must(recs, err)
	wantErr(t, alice.book.Allowed(bob.id, t0), nil)
	m = send(Message{Kind: KindCountersign, ID: a.ID, Sig: sig})
	recs, err = bob.book.Complete(alice.id, m.Sig, t0)
	bob.must(recs, err)

	ca, _ := alice.book.Get(bob.id, t0)
	cb, _ := bob.book.Get(alice.id, t0)
	if !bytes.Equal(ca.Cert, cb.Cert) || ca.Cert == nil {
		t.Fatal("the two nodes hold different certificates")
	}
	if ca.Handle != "Bob" || cb.Handle != "Alice" {
		t.Fatalf("handles %q %q", ca.Handle, cb.Handle)
	}
	cert, err := DecodeCertificate(ca.Cert)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range DefaultScopes {
		if !cert.HasScope(s) {
			t.Fatalf("scope %s missing", s)
		}
	}
	later := t0.Add(300 * 24 * time.Hour)
	for _, n := range []*tnode{alice, bob} {
		wantErr(t, n.book.Allowed(other(n, alice, bob), later), nil)
		wantState(t, n, other(n, alice, bob), later, StateActive)
		wantErr(t, n.book.Allowed(n.id, later), nil) // own node needs no consent
	}
	wantErr(t, bob.book.Allowed(newNode(t, Policy{}).id, t0), ErrNoContact)
	// A repeated request between contacts is refused.
	_, _, err = alice.book.OutgoingRequest(bob.id, "Alice", "again", t0)
	wantErr(t, err, ErrAlreadyContact)
}

func other(n, a, b *tnode) (id peer.ID) {
	if n == a {
		return b.id
	}
	return a.id
}

func wantState(t testing.TB, n *tnode, p peer.ID, now time.Time, want State) {
	t.Helper()
	if got := stateOf(t, n, p, now); got != want {
		t.Fatalf("state %s, want %s", got, want)
	}
}

func TestDenyAndRateLimit(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{DenyCooldown: 24 * time.Hour})
	wire, recs, err := alice.book.OutgoingRequest(bob.id, "Alice", "hi", t0)
	alice.must(recs, err)
	c, recs, err := bob.book.IncomingRequest(alice.id, wire, false, t0)
	bob.must(recs, err)
	bob.must(bob.book.Deny(c.ID, t0))
	_, err = bob.book.Deny(c.ID, t0)
	wantErr(t, err, ErrNotFound)
	_, _, err = bob.book.Approve(c.ID, 0, t0)
	wantErr(t, err, ErrNotFound)
	wantState(t, bob, alice.id, t0, StateDenied)

	_, err = alice.book.Denied(bob.id, "wrong-id", t0)
	wantErr(t, err, ErrNotFound)
	alice.must(alice.book.Denied(bob.id, c.ID, t0))
	wantState(t, alice, bob.id, t0, StateDenied)

	for _, tc := range []struct {
		name  string
		after time.Duration
		want  error
	}{
		{"at once", time.Second, ErrDenied},
		{"an hour later", time.Hour, ErrDenied},
		{"just before the end", 24*time.Hour - time.Millisecond, ErrDenied},
		{"after the cool-down", 24 * time.Hour, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(tc.after)
			wire, _, err := alice.book.OutgoingRequest(bob.id, "Alice", "please", now)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = bob.book.IncomingRequest(alice.id, wire, false, now)
			wantErr(t, err, tc.want)
		})
	}
	wantState(t, bob, alice.id, t0.Add(24*time.Hour), StatePendingIn)
}

func TestDenyAfterApprove(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	wire, _, _ := alice.book.OutgoingRequest(bob.id, "Alice", "", t0)
	c, _, err := bob.book.IncomingRequest(alice.id, wire, false, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bob.book.Approve(c.ID, 0, t0); err != nil {
		t.Fatal(err)
	}
	_, err = bob.book.Deny(c.ID, t0)
	wantErr(t, err, ErrState)
}

func TestRevoke(t *testing.T) {
	for _, tc := range []struct {
		name          string
		byApprover    bool
		beforeComplet bool // the approver revokes before the countersignature came back
	}{
		{"requester revokes", false, false},
		{"approver revokes", true, false},
		{"approver revokes before complete", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, appr := newNode(t, Policy{}), newNode(t, Policy{})
			now := t0
			if tc.beforeComplet {
				wire, _, _ := req.book.OutgoingRequest(appr.id, "R", "", now)
				c, _, _ := appr.book.IncomingRequest(req.id, wire, false, now)
				a, _, err := appr.book.Approve(c.ID, 0, now)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := req.book.Countersign(appr.id, "", a.Payload, a.Sig, now); err != nil {
					t.Fatal(err)
				}
			} else {
				connect(t, req, appr, now, 0)
			}
			revoker, subject := req, appr
			if tc.byApprover {
				revoker, subject = appr, req
			}
			now = now.Add(time.Minute)
			rev, recs, err := revoker.book.Revoke(subject.id, now)
			revoker.must(recs, err)
			wantErr(t, revoker.book.Allowed(subject.id, now), ErrRevoked)
			c, recs, err := subject.book.ApplyRevocation(rev, now)
			subject.must(recs, err)
			if c.State != StateRevoked {
				t.Fatalf("subject state %s", c.State)
			}
			wantErr(t, subject.book.Allowed(revoker.id, now), ErrRevoked)

			// Replays are refused and change nothing.
			_, _, err = subject.book.ApplyRevocation(rev, now.Add(time.Hour))
			wantErr(t, err, ErrReplay)
			// Revoking twice is refused; a revocation for someone else too.
			_, _, err = revoker.book.Revoke(subject.id, now)
			wantErr(t, err, ErrState)
			third := newNode(t, Policy{})
			_, _, err = third.book.ApplyRevocation(rev, now)
			wantErr(t, err, ErrWrongPeers)
			if tc.beforeComplet {
				_, err = appr.book.Complete(req.id, []byte("late"), now)
				wantErr(t, err, ErrState)
			}

			// The revoked peer may ask again only after the cool-down; a
			// new certificate then outranks the revoked one.
			wire, _, err := subject.book.OutgoingRequest(revoker.id, "S", "sorry", now)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = revoker.book.IncomingRequest(subject.id, wire, false, now)
			wantErr(t, err, ErrDenied)
			now = now.Add(25 * time.Hour)
			connect(t, subject, revoker, now, 0)
			for _, n := range []*tnode{req, appr} {
				wantErr(t, n.book.Allowed(other(n, req, appr), now), nil)
			}
			// The old revocation cannot end the new certificate.
			_, _, err = subject.book.ApplyRevocation(rev, now)
			wantErr(t, err, ErrReplay)
			wantErr(t, subject.book.Allowed(revoker.id, now), nil)
		})
	}
}

func TestStaleRevocation(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	connect(t, alice, bob, t0, 0)
	// A revocation for an older certificate (cert_seq below the current one)
	// advances the replay counter but keeps the contact.
	c, _ := alice.book.Get(bob.id, t0)
	rev, err := NewRevocation(bob.priv, alice.id, c.Seq-1, 5, t0)
	if err != nil {
		t.Fatal(err)
	}
	got, recs, err := alice.book.ApplyRevocation(rev, t0)
	alice.must(recs, err)
	if got.State != StateActive || got.LastRevocationSeq != 5 {
		t.Fatalf("after stale revocation: %s %d", got.State, got.LastRevocationSeq)
	}
	wantErr(t, alice.book.Allowed(bob.id, t0), nil)
	// A revocation from a stranger names no contact.
	stranger := newNode(t, Policy{})
	rev, _ = NewRevocation(stranger.priv, alice.id, 1, 1, t0)
	_, _, err = alice.book.ApplyRevocation(rev, t0)
	wantErr(t, err, ErrNoContact)
}

func TestCancelPendingRequest(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	wire, _, _ := alice.book.OutgoingRequest(bob.id, "Alice", "", t0)
	c, _, _ := bob.book.IncomingRequest(alice.id, wire, false, t0)
	rev, recs, err := alice.book.Revoke(bob.id, t0)
	alice.must(recs, err)
	got, _, err := bob.book.ApplyRevocation(rev, t0)
	if err != nil {
		t.Fatal(err)
	}
	// Alice was a stranger to bob: her cancelled request goes as an
	// expired one does, and bob keeps nothing of her.
	if got.State != "" {
		t.Fatalf("state %s", got.State)
	}
	if c, ok := bob.book.Get(alice.id, t0); ok {
		t.Fatalf("bob keeps an entry for alice's cancelled request: %s", c.State)
	}
	_, _, err = bob.book.Approve(c.ID, 0, t0)
	wantErr(t, err, ErrNotFound)
	// Alice cancelled her own request: she is not blocked by herself, and bob may ask her.
	wire, _, _ = bob.book.OutgoingRequest(alice.id, "Bob", "", t0)
	if _, _, err := alice.book.IncomingRequest(bob.id, wire, false, t0); err != nil {
		t.Fatal(err)
	}
}

func TestExpiry(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	connect(t, alice, bob, t0, time.Hour)
	for _, tc := range []struct {
		after time.Duration
		err   error
		state State
	}{
		{0, nil, StateActive},
		{59 * time.Minute, nil, StateActive},
		{time.Hour - time.Millisecond, nil, StateActive},
		{time.Hour, ErrExpired, StateExpired},
		{48 * time.Hour, ErrExpired, StateExpired},
	} {
		now := t0.Add(tc.after)
		for _, n := range []*tnode{alice, bob} {
			p := other(n, alice, bob)
			wantErr(t, n.book.Allowed(p, now), tc.err)
			if l := n.book.List(now); len(l) != 1 || l[0].State != tc.state {
				t.Fatalf("+%s: List %v, want %s", tc.after, l, tc.state)
			}
		}
	}
	// An expired contact may be asked again.
	now := t0.Add(2 * time.Hour)
	connect(t, bob, alice, now, time.Hour)
	wantErr(t, alice.book.Allowed(bob.id, now), nil)
}

func TestNotYetValid(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	payload, err := NewCertPayload(alice.id, bob.id, []string{ScopeAsk}, t0.Add(time.Hour), t0.Add(2*time.Hour), 1)
	if err != nil {
		t.Fatal(err)
	}
	wire := seal(t, payload, alice, bob)
	cert, err := DecodeCertificate(wire)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   time.Duration
		want error
	}{
		{0, ErrNotYetValid},
		{time.Hour - time.Millisecond, ErrNotYetValid},
		{time.Hour, nil},
		{2*time.Hour - time.Millisecond, nil},
		{2 * time.Hour, ErrExpired},
	} {
		wantErr(t, cert.Check(alice.id, bob.id, t0.Add(tc.at)), tc.want)
		wantErr(t, cert.Check(bob.id, alice.id, t0.Add(tc.at)), tc.want)
	}

	// Through a book: an approval that starts an hour later is refused and
	// nothing changes; one that starts within the clock skew is taken and
	// works from its not_before.
	if _, _, err := alice.book.OutgoingRequest(bob.id, "A", "", t0); err != nil {
		t.Fatal(err)
	}
	sigB, _ := SignCert(bob.priv, payload)
	_, recs, err := alice.book.Countersign(bob.id, "", payload, sigB, t0)
	wantErr(t, err, ErrNotYetValid)
	if len(recs) != 0 || stateOf(t, alice, bob.id, t0) != StatePendingOut {
		t.Fatalf("a refused approval changed the book: %v", recs)
	}
	soon, err := NewCertPayload(alice.id, bob.id, []string{ScopeAsk}, t0.Add(time.Minute), t0.Add(2*time.Hour), 2)
	if err != nil {
		t.Fatal(err)
	}
	sigB, _ = SignCert(bob.priv, soon)
	if _, _, err := alice.book.Countersign(bob.id, "", soon, sigB, t0); err != nil {
		t.Fatal(err)
	}
	wantErr(t, alice.book.Allowed(bob.id, t0), ErrNotYetValid)
	wantErr(t, alice.book.Allowed(bob.id, t0.Add(time.Minute)), nil)
}

func TestOnlyTheApproverRenews(t *testing.T) {
	req, appr := newNode(t, Policy{}), newNode(t, Policy{})
	connect(t, req, appr, t0, time.Hour)
	// The requester offers the approver a longer certificate: refused.
	c, _ := appr.book.Get(req.id, t0)
	payload, err := NewCertPayload(req.id, appr.id, DefaultScopes, t0, t0.Add(1000*time.Hour), c.Seq+1)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := SignCert(req.priv, payload)
	_, recs, err := appr.book.Countersign(req.id, "", payload, sig, t0)
	wantErr(t, err, ErrNotRequested)
	if len(recs) != 0 {
		t.Fatal("records for a refused renewal")
	}
	wantErr(t, appr.book.Allowed(req.id, t0.Add(2*time.Hour)), ErrExpired)
	// The approver's role survives a reload.
	loaded, _ := NewBook(appr.priv, Policy{})
	if err := loaded.Load([][]byte{appr.store[req.id]}); err != nil {
		t.Fatal(err)
	}
	_, _, err = loaded.Countersign(req.id, "", payload, sig, t0)
	wantErr(t, err, ErrNotRequested)
}

// seal signs payload by both nodes and assembles the certificate.
func seal(t testing.TB, payload []byte, x, y *tnode) []byte {
	t.Helper()
	sx, err := SignCert(x.priv, payload)
	if err != nil {
		t.Fatal(err)
	}
	sy, err := SignCert(y.priv, payload)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := AssembleCert(payload, sy, sx)
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

func TestForgedCertificate(t *testing.T) {
	alice, bob, mallory := newNode(t, Policy{}), newNode(t, Policy{}), newNode(t, Policy{})
	payload, err := NewCertPayload(alice.id, bob.id, DefaultScopes, t0, t0.Add(time.Hour), 7)
	if err != nil {
		t.Fatal(err)
	}
	good := seal(t, payload, alice, bob)
	sigA, _ := SignCert(alice.priv, payload)
	sigB, _ := SignCert(bob.priv, payload)
	// Mallory signs as if she were bob (SignCert refuses, so sign directly).
	forged, err := mallory.priv.Sign(append([]byte("parley-contact-cert\x00"), payload...))
	if err != nil {
		t.Fatal(err)
	}
	_, err = SignCert(mallory.priv, payload)
	wantErr(t, err, ErrWrongPeers)
	_, err = AssembleCert(payload, sigA, forged)
	wantErr(t, err, ErrBadSignature)
	_, err = AssembleCert(payload, sigA, sigA)
	wantErr(t, err, ErrBadSignature)

	var w certWire
	if err := decMode.Unmarshal(good, &w); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*certWire)
	}{
		{"sig_b by a third key", func(w *certWire) {
			if bytes.Equal(w.SigA, sigA) {
				w.SigB = forged
			} else {
				w.SigA = forged
			}
		}},
		{"signatures swapped", func(w *certWire) { w.SigA, w.SigB = w.SigB, w.SigA }},
		{"payload changed", func(w *certWire) {
			p, _ := NewCertPayload(alice.id, bob.id, DefaultScopes, t0, t0.Add(1000*time.Hour), 7)
			w.Payload = p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w2 := w
			tc.mutate(&w2)
			b, err := encMode.Marshal(w2)
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeCertificate(b)
			wantErr(t, err, ErrBadSignature)
		})
	}

	// A book refuses an approval not signed by the approver.
	if _, _, err := alice.book.OutgoingRequest(bob.id, "A", "", t0); err != nil {
		t.Fatal(err)
	}
	_, _, err = alice.book.Countersign(bob.id, "", payload, forged, t0)
	wantErr(t, err, ErrBadSignature)
	wantErr(t, alice.book.Allowed(bob.id, t0), ErrNoContact)
	// And a countersignature not by the requester.
	wire, _, _ := mallory.book.OutgoingRequest(bob.id, "M", "", t0)
	c, _, _ := bob.book.IncomingRequest(mallory.id, wire, false, t0)
	if _, _, err := bob.book.Approve(c.ID, 0, t0); err != nil {
		t.Fatal(err)
	}
	_, err = bob.book.Complete(mallory.id, sigB, t0)
	wantErr(t, err, ErrBadSignature)
	wantErr(t, bob.book.Allowed(mallory.id, t0), ErrNoContact)
}

func TestCertificateForOtherPeers(t *testing.T) {
	alice, bob, carol := newNode(t, Policy{}), newNode(t, Policy{}), newNode(t, Policy{})
	payload, _ := NewCertPayload(alice.id, bob.id, DefaultScopes, t0, t0.Add(time.Hour), 1)
	cert, err := DecodeCertificate(seal(t, payload, alice, bob))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		self, other peer.ID
		want        error
	}{
		{alice.id, bob.id, nil},
		{bob.id, alice.id, nil},
		{alice.id, carol.id, ErrWrongPeers},
		{carol.id, bob.id, ErrWrongPeers},
		{alice.id, alice.id, ErrWrongPeers},
	} {
		wantErr(t, cert.Check(tc.self, tc.other, t0), tc.want)
	}
	// Bob forwards alice's approval to carol, who asked bob: refused.
	if _, _, err := carol.book.OutgoingRequest(bob.id, "C", "", t0); err != nil {
		t.Fatal(err)
	}
	sigB, _ := SignCert(bob.priv, payload)
	_, _, err = carol.book.Countersign(bob.id, "", payload, sigB, t0)
	wantErr(t, err, ErrWrongPeers)
	// An approval from a peer never asked.
	_, _, err = alice.book.Countersign(bob.id, "", payload, sigB, t0)
	wantErr(t, err, ErrNotRequested)
	// A request addressed to someone else, or relayed by another peer.
	wire, _ := NewRequest(alice.priv, bob.id, "A", "", t0)
	_, _, err = carol.book.IncomingRequest(alice.id, wire, false, t0)
	wantErr(t, err, ErrWrongPeers)
	_, _, err = bob.book.IncomingRequest(carol.id, wire, false, t0)
	wantErr(t, err, ErrWrongPeers)
	// A stored record whose certificate names other peers does not load.
	connect(t, alice, bob, t0, 0)
	fresh, err := NewBook(carol.priv, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, fresh.Load([][]byte{alice.store[bob.id]}), ErrBadRecord)
}

func TestRequestLimits(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	for _, tc := range []struct {
		name, handle, note string
		want               error
	}{
		{"empty", "", "", nil},
		{"note at limit, multibyte", "Ålice", strings.Repeat("é", MaxNote), nil},
		{"note with newlines", "A", "line one\nline two\tend", nil},
		{"note over limit", "A", strings.Repeat("é", MaxNote+1), ErrTooLong},
		{"handle at limit", strings.Repeat("h", MaxHandle), "", nil},
		{"handle over limit", strings.Repeat("h", MaxHandle+1), "", ErrTooLong},
		{"control in handle", "A\nB", "", ErrMalformed},
		{"escape in note", "A", "hi \x1b[2J", ErrMalformed},
		{"bad utf-8", "A", "\xff", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire, err := NewRequest(alice.priv, bob.id, tc.handle, tc.note, t0)
			wantErr(t, err, tc.want)
			if err != nil {
				return
			}
			r, err := DecodeRequest(wire)
			if err != nil {
				t.Fatal(err)
			}
			if r.From != alice.id || r.To != bob.id || r.Note != tc.note || r.Handle != tc.handle || !r.Time.Equal(t0) || r.ID != RequestID(wire) {
				t.Fatalf("decoded %+v", r)
			}
		})
	}
	// An oversized note signed by a valid key is refused on decode too.
	p := requestPayload{From: []byte(alice.id), To: []byte(bob.id), Note: strings.Repeat("x", MaxNote+1), Time: t0.UnixMilli(), Nonce: make([]byte, nonceLen)}
	wire, err := sealOne(alice.priv, "parley-contact-request", &p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = DecodeRequest(wire)
	wantErr(t, err, ErrTooLong)
	_, _, err = bob.book.IncomingRequest(alice.id, wire, false, t0)
	wantErr(t, err, ErrTooLong)
	// A request signed by someone else than from.
	p.Note = "ok"
	mallory := newNode(t, Policy{})
	wire, _ = sealOne(mallory.priv, "parley-contact-request", &p)
	_, err = DecodeRequest(wire)
	wantErr(t, err, ErrBadSignature)
	// Requests to self are refused.
	_, err = NewRequest(alice.priv, alice.id, "", "", t0)
	wantErr(t, err, ErrWrongPeers)
	_, _, err = alice.book.OutgoingRequest(alice.id, "", "", t0)
	wantErr(t, err, ErrWrongPeers)
}

// request makes a signed request from a new stranger to n.
func request(t *testing.T, to *tnode) (*tnode, []byte) {
	t.Helper()
	s := newNode(t, Policy{})
	w, err := NewRequest(s.priv, to.id, "stranger", "", t0)
	if err != nil {
		t.Fatal(err)
	}
	return s, w
}

// Strangers with fresh keys cannot fill the book: at the cap a new request
// drops the oldest stranger's, and a known peer's request never gives way.
func TestRequestFlood(t *testing.T) {
	const max = 5
	bob := newNode(t, Policy{MaxPendingIn: max, MaxPendingKnown: 2})
	var sybils []*tnode
	var firstWire []byte
	for i := range max {
		s, w := request(t, bob)
		_, recs, err := bob.book.IncomingRequest(s.id, w, false, t0.Add(time.Duration(i)*time.Second))
		bob.must(recs, err)
		sybils = append(sybils, s)
		if i == 0 {
			firstWire = w
		}
	}
	if _, _, err := bob.book.IncomingRequest(sybils[0].id, firstWire, false, t0.Add(time.Minute)); err != nil {
		t.Fatalf("same request again: %v", err)
	}
	w2, _ := NewRequest(sybils[0].priv, bob.id, "x", "another", t0)
	_, _, err := bob.book.IncomingRequest(sybils[0].id, w2, false, t0.Add(time.Minute))
	wantErr(t, err, ErrAlreadyPending)

	// A forged request at the cap drops nobody.
	forger, _ := request(t, bob)
	_, fw := request(t, bob)
	_, recs, err := bob.book.IncomingRequest(forger.id, fw, false, t0.Add(time.Minute))
	wantErr(t, err, ErrWrongPeers)
	if len(recs) != 0 {
		t.Fatalf("a forged request changed the book: %v", recs)
	}

	// One more stranger: admitted, the oldest stranger's request dropped.
	genuine, w := request(t, bob)
	c, recs, err := bob.book.IncomingRequest(genuine.id, w, false, t0.Add(time.Minute))
	bob.must(recs, err)
	if c.State != StatePendingIn {
		t.Fatalf("genuine request: %+v", c)
	}
	if _, ok := bob.book.Get(sybils[0].id, t0); ok {
		t.Fatal("the oldest stranger's request was kept")
	}
	if _, ok := bob.store[sybils[0].id]; ok {
		t.Fatal("the dropped request's record was not deleted")
	}
	if n := len(bob.book.List(t0)); n != max {
		t.Fatalf("%d contacts, want %d", n, max)
	}

	// Known peers have their own room, which strangers cannot take.
	var known []*tnode
	for i := range 2 {
		k, w := request(t, bob)
		_, recs, err := bob.book.IncomingRequest(k.id, w, true, t0.Add(2*time.Minute+time.Duration(i)))
		bob.must(recs, err)
		known = append(known, k)
	}
	for range 3 * max {
		s, w := request(t, bob)
		_, recs, err := bob.book.IncomingRequest(s.id, w, false, t0.Add(3*time.Minute))
		bob.must(recs, err)
	}
	for _, k := range known {
		if c, ok := bob.book.Get(k.id, t0); !ok || c.State != StatePendingIn || !c.Known {
			t.Fatalf("a known peer's request gave way to strangers: %+v %v", c, ok)
		}
	}
	k, w := request(t, bob)
	_, _, err = bob.book.IncomingRequest(k.id, w, true, t0.Add(4*time.Minute))
	wantErr(t, err, ErrTooManyPending)

	// Denying one makes room for one more known peer.
	c, _ = bob.book.Get(known[0].id, t0)
	bob.must(bob.book.Deny(c.ID, t0.Add(5*time.Minute)))
	if _, _, err := bob.book.IncomingRequest(k.id, w, true, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
}

// Requests expire after the TTL, also across a restart (Load then Expire),
// and a dropped request puts back what the book knew of the peer.
func TestPendingRequestsExpire(t *testing.T) {
	ttl := 48 * time.Hour
	bob := newNode(t, Policy{PendingTTL: ttl})
	stranger, w := request(t, bob)
	c, recs, err := bob.book.IncomingRequest(stranger.id, w, false, t0)
	bob.must(recs, err)

	// Alice was a contact, revoked; after the cool-down she asks again.
	alice := newNode(t, Policy{})
	connect(t, alice, bob, t0, 0)
	_, recs, err = bob.book.Revoke(alice.id, t0)
	bob.must(recs, err)
	before, _ := bob.book.Get(alice.id, t0)
	later := t0.Add(25 * time.Hour)
	wa, err := NewRequest(alice.priv, bob.id, "Alice", "again", later)
	if err != nil {
		t.Fatal(err)
	}
	ca, recs, err := bob.book.IncomingRequest(alice.id, wa, false, later)
	bob.must(recs, err)
	if ca.State != StatePendingIn || !ca.Known {
		t.Fatalf("a past contact's request: %+v", ca)
	}
	// Carol was asked by bob and asks back.
	carol := newNode(t, Policy{})
	wc, recs, err := bob.book.OutgoingRequest(carol.id, "Bob", "hi", t0)
	bob.must(recs, err)
	_ = wc
	wcb, _ := NewRequest(carol.priv, bob.id, "Carol", "", t0)
	_, recs, err = bob.book.IncomingRequest(carol.id, wcb, false, t0)
	bob.must(recs, err)

	if recs, err := bob.book.Expire(t0.Add(ttl - time.Millisecond)); err != nil || len(recs) != 0 {
		t.Fatalf("expired early: %v %v", recs, err)
	}
	recs, err = bob.book.Expire(t0.Add(ttl))
	bob.must(recs, err)
	if _, ok := bob.book.Get(stranger.id, t0.Add(ttl)); ok {
		t.Fatal("the stranger's request outlived its TTL")
	}
	if _, ok := bob.store[stranger.id]; ok {
		t.Fatal("the expired request is still stored")
	}
	if _, _, err := bob.book.Approve(c.ID, 0, t0.Add(ttl)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("approve an expired request: %v", err)
	}
	if got := stateOf(t, bob, carol.id, t0.Add(ttl)); got != StatePendingOut {
		t.Fatalf("carol after her request expired: %s, want pending-out (bob's request stands)", got)
	}

	// Across a restart: a new book loads the records, and Expire drops
	// alice's request, putting back the revoked contact with its counters.
	reload := func() *Book {
		b, err := NewBook(bob.priv, Policy{PendingTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		var vals [][]byte
		for _, v := range bob.store {
			vals = append(vals, v)
		}
		if err := b.Load(vals); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b2 := reload()
	if got, _ := b2.Get(alice.id, later); got.State != StatePendingIn {
		t.Fatalf("alice after a restart: %s", got.State)
	}
	recs, err = b2.Expire(later.Add(ttl))
	bob.must(recs, err)
	got, _ := reload().Get(alice.id, later.Add(ttl))
	if got.State != StateRevoked || got.Seq != before.Seq || got.RevokeSeq != before.RevokeSeq || got.Revocation == nil {
		t.Fatalf("alice after her request expired: %+v, want the revoked contact back", got)
	}
}

func TestMutualRequests(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	wa, _, _ := alice.book.OutgoingRequest(bob.id, "Alice", "", t0)
	wb, _, _ := bob.book.OutgoingRequest(alice.id, "Bob", "", t0)
	ca, _, err := alice.book.IncomingRequest(bob.id, wb, false, t0)
	if err != nil {
		t.Fatal(err)
	}
	cb, _, err := bob.book.IncomingRequest(alice.id, wa, false, t0)
	if err != nil {
		t.Fatal(err)
	}
	if ca.State != StatePendingIn || ca.OutRequest == nil {
		t.Fatalf("mutual contact %+v", ca)
	}
	// Both approve at once, at slightly different times.
	aa, _, err := alice.book.Approve(ca.ID, 0, t0)
	if err != nil {
		t.Fatal(err)
	}
	ab, _, err := bob.book.Approve(cb.ID, 0, t0.Add(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	sa, _, err := alice.book.Countersign(bob.id, "", ab.Payload, ab.Sig, t0)
	if err != nil {
		t.Fatal(err)
	}
	sb, _, err := bob.book.Countersign(alice.id, "", aa.Payload, aa.Sig, t0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bob.book.Complete(alice.id, sa, t0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = alice.book.Complete(bob.id, sb, t0) // alice's offer is older than the cert she holds
	wantErr(t, err, ErrReplay)
	for _, n := range []*tnode{alice, bob} {
		wantErr(t, n.book.Allowed(other(n, alice, bob), t0), nil)
	}
}

func TestLostCountersignatureRenewal(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	wire, _, _ := alice.book.OutgoingRequest(bob.id, "A", "", t0)
	c, _, _ := bob.book.IncomingRequest(alice.id, wire, false, t0)
	a1, _, _ := bob.book.Approve(c.ID, 0, t0)
	if _, _, err := alice.book.Countersign(bob.id, "", a1.Payload, a1.Sig, t0); err != nil {
		t.Fatal(err)
	}
	// The countersignature is lost; alice is active, bob still pending-in.
	wantState(t, bob, alice.id, t0, StatePendingIn)
	// The same approval again is a replay; a fresh one renews.
	_, _, err := alice.book.Countersign(bob.id, "", a1.Payload, a1.Sig, t0)
	wantErr(t, err, ErrReplay)
	now := t0.Add(time.Minute)
	a2, _, err := bob.book.Approve(c.ID, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	sig, _, err := alice.book.Countersign(bob.id, "", a2.Payload, a2.Sig, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.book.Complete(alice.id, sig, now); err != nil {
		t.Fatal(err)
	}
	ca, _ := alice.book.Get(bob.id, now)
	cb, _ := bob.book.Get(alice.id, now)
	if !bytes.Equal(ca.Cert, cb.Cert) || ca.State != StateActive || cb.State != StateActive {
		t.Fatal("renewal did not converge")
	}
	_, err = bob.book.Complete(alice.id, sig, now)
	wantErr(t, err, ErrState)
}

func TestLoadRoundTrip(t *testing.T) {
	alice := newNode(t, Policy{})
	peers := map[State]*tnode{}
	for _, s := range []State{StateActive, StatePendingIn, StatePendingOut, StateDenied, StateRevoked, StateExpired} {
		peers[s] = newNode(t, Policy{})
	}
	connect(t, alice, peers[StateActive], t0, 0)
	connect(t, peers[StateExpired], alice, t0, time.Hour)
	connect(t, alice, peers[StateRevoked], t0, 0)
	alice.must(func() ([]Record, error) { _, r, err := alice.book.Revoke(peers[StateRevoked].id, t0); return r, err }())
	w, _ := NewRequest(peers[StatePendingIn].priv, alice.id, "in", "note in", t0)
	alice.must(func() ([]Record, error) {
		_, r, err := alice.book.IncomingRequest(peers[StatePendingIn].id, w, false, t0)
		return r, err
	}())
	alice.must(func() ([]Record, error) {
		_, r, err := alice.book.OutgoingRequest(peers[StatePendingOut].id, "me", "note out", t0)
		return r, err
	}())
	w, _ = NewRequest(peers[StateDenied].priv, alice.id, "den", "", t0)
	c, recs, err := alice.book.IncomingRequest(peers[StateDenied].id, w, false, t0)
	alice.must(recs, err)
	alice.must(alice.book.Deny(c.ID, t0))

	now := t0.Add(2 * time.Hour)
	var records [][]byte
	for _, v := range alice.store {
		records = append(records, v)
	}
	loaded, err := NewBook(alice.priv, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Load(records); err != nil {
		t.Fatal(err)
	}
	want, got := alice.book.List(now), loaded.List(now)
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("after Load:\n got %+v\nwant %+v", got, want)
	}
	for s, n := range peers {
		if st := stateOf(t, &tnode{book: loaded}, n.id, now); st != s {
			t.Errorf("%s loaded as %s", s, st)
		}
		if a, b := alice.book.Allowed(n.id, now), loaded.Allowed(n.id, now); (a == nil) != (b == nil) {
			t.Errorf("%s: Allowed %v vs %v", s, a, b)
		}
	}
	// Bad records are reported; the good ones still load.
	damaged := append([]byte(nil), alice.store[peers[StateActive].id]...)
	damaged[len(damaged)/2] ^= 0xff
	partial, _ := NewBook(alice.priv, Policy{})
	err = partial.Load([][]byte{alice.store[peers[StatePendingIn].id], []byte("junk"), damaged})
	wantErr(t, err, ErrBadRecord)
	if _, ok := partial.Get(peers[StatePendingIn].id, now); !ok {
		t.Fatal("good record not loaded")
	}
	wantErr(t, partial.Allowed(peers[StateActive].id, now), ErrNoContact)
}

func TestMarshalContact(t *testing.T) {
	c := Contact{ID: "abc", Peer: newNode(t, Policy{}).id, Handle: "H", State: StatePendingIn, Note: "n", Updated: t0, DeniedUntil: t0.Add(time.Hour)}
	b, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var d Contact
	if err := d.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("round trip:\n%+v\n%+v", c, d)
	}
	for _, bad := range [][]byte{nil, {0xa0}, []byte("x")} {
		if err := d.UnmarshalBinary(bad); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("%x: %v", bad, err)
		}
	}
}

// restored returns a node with n's key whose book is loaded from records:
// n started on an older copy of its home.
func restored(t *testing.T, n *tnode, records map[peer.ID][]byte) *tnode {
	t.Helper()
	b, err := NewBook(n.priv, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	var vals [][]byte
	for _, v := range records {
		vals = append(vals, v)
	}
	if err := b.Load(vals); err != nil {
		t.Fatal(err)
	}
	return &tnode{t: t, priv: n.priv, id: n.id, book: b, store: maps.Clone(records)}
}

func TestRevocationShownBackToARestoredCopy(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	connect(t, alice, bob, t0, 0)
	old := maps.Clone(alice.store) // a copy of alice's home, taken while bob is a contact

	now := t0.Add(time.Hour)
	rev, recs, err := alice.book.Revoke(bob.id, now)
	alice.must(recs, err)
	c, recs, err := bob.book.ApplyRevocation(rev, now)
	bob.must(recs, err)
	if !bytes.Equal(c.PeerRevocation, rev) {
		t.Fatal("bob keeps no copy of alice's revocation")
	}
	// Bob's book keeps it across a restart.
	bob = restored(t, bob, bob.store)
	c, _ = bob.book.Get(alice.id, now)
	if c.State != StateRevoked || !bytes.Equal(c.PeerRevocation, rev) {
		t.Fatalf("after a reload bob has %s and %d bytes of alice's revocation", c.State, len(c.PeerRevocation))
	}

	// Alice is started on the old copy: bob is a contact again there.
	alice = restored(t, alice, old)
	now = now.Add(time.Hour)
	wantErr(t, alice.book.Allowed(bob.id, now), nil)
	// Bob shows her own revocation back; she takes it in, as made.
	got, recs, err := alice.book.ApplyRevocation(c.PeerRevocation, now)
	alice.must(recs, err)
	if got.State != StateRevoked || !bytes.Equal(got.Revocation, rev) || got.RevokeSeq == 0 {
		t.Fatalf("restored: %s, revocation kept %v, seq %d", got.State, bytes.Equal(got.Revocation, rev), got.RevokeSeq)
	}
	wantErr(t, alice.book.Allowed(bob.id, now), ErrRevoked)
	if !got.DeniedUntil.After(now) {
		t.Fatalf("bob may ask again at once (denied until %v)", got.DeniedUntil)
	}
	// It survives her next restart, and showing it again changes nothing.
	alice = restored(t, alice, alice.store)
	wantErr(t, alice.book.Allowed(bob.id, now), ErrRevoked)
	_, _, err = alice.book.ApplyRevocation(rev, now)
	wantErr(t, err, ErrReplay)

	// Once bob and alice are contacts again, the old revocation is
	// stale on both sides: bob drops his copy, and alice refuses it.
	now = now.Add(25 * time.Hour)
	connect(t, bob, alice, now, 0)
	if c, _ := bob.book.Get(alice.id, now); c.PeerRevocation != nil {
		t.Fatal("bob keeps alice's revocation after a new certificate")
	}
	_, _, err = alice.book.ApplyRevocation(rev, now)
	wantErr(t, err, ErrReplay)
	wantErr(t, alice.book.Allowed(bob.id, now), nil)

	// A node restored from a copy older than the contact knows nothing to
	// take back.
	stranger := restored(t, alice, map[peer.ID][]byte{})
	_, _, err = stranger.book.ApplyRevocation(rev, now)
	wantErr(t, err, ErrNoContact)
}

// TestRestoredRevocationOfANewerCertificate: a revocation made after a
// renewal is taken back by a copy from before the renewal (it ends the
// certificate the copy holds), but one made before it is not taken back
// by a copy that holds the newer certificate.
func TestRestoredRevocationOfANewerCertificate(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	connect(t, alice, bob, t0, 0)
	old := maps.Clone(alice.store)
	c, _ := alice.book.Get(bob.id, t0)
	early, err := NewRevocation(alice.priv, bob.id, c.Seq-1, nextSeq(0, t0), t0)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = restored(t, alice, old).book.ApplyRevocation(early, t0)
	wantErr(t, err, ErrReplay)

	later, err := NewRevocation(alice.priv, bob.id, c.Seq+5, nextSeq(0, t0.Add(time.Hour)), t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := restored(t, alice, old).book.ApplyRevocation(later, t0.Add(time.Hour))
	wantErr(t, err, nil)
	if got.State != StateRevoked || got.Seq != c.Seq+5 {
		t.Fatalf("after the later revocation: %s at seq %d", got.State, got.Seq)
	}
}

// TestRevocationsToShow: a revoked contact sends the revocations that end
// its current certificate: not one of its own that a later certificate
// outdated, and both when each side revoked the other.
func TestRevocationsToShow(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	connect(t, alice, bob, t0, 0)
	now := t0.Add(time.Hour)
	rev1, recs, err := alice.book.Revoke(bob.id, now)
	alice.must(recs, err)
	_, recs, err = bob.book.ApplyRevocation(rev1, now)
	bob.must(recs, err)
	now = now.Add(25 * time.Hour)
	connect(t, bob, alice, now, 0)
	now = now.Add(time.Hour)
	rev2, recs, err := bob.book.Revoke(alice.id, now)
	bob.must(recs, err)
	c, recs, err := alice.book.ApplyRevocation(rev2, now)
	alice.must(recs, err)
	if got := c.Revocations(); len(got) != 1 || !bytes.Equal(got[0], rev2) {
		t.Fatalf("alice shows %d revocations; want bob's only (hers ended an older certificate)", len(got))
	}
	if got, _ := bob.book.Get(alice.id, now); len(got.Revocations()) != 1 || !bytes.Equal(got.Revocations()[0], rev2) {
		t.Fatal("bob, who revoked last, does not show his revocation alone")
	}
	// Each revokes the other at once: both end the certificate, own first.
	carol, dave := newNode(t, Policy{}), newNode(t, Policy{})
	connect(t, carol, dave, t0, 0)
	revC, recs, err := carol.book.Revoke(dave.id, now)
	carol.must(recs, err)
	revD, recs, err := dave.book.Revoke(carol.id, now)
	dave.must(recs, err)
	c, recs, err = carol.book.ApplyRevocation(revD, now)
	carol.must(recs, err)
	if got := c.Revocations(); len(got) != 2 || !bytes.Equal(got[0], revC) || !bytes.Equal(got[1], revD) {
		t.Fatalf("carol shows %d revocations, want hers then dave's", len(got))
	}
}

// TestRestoredRevocationYieldsToALaterDecision: a node restored from a copy
// older than the contact asks the peer again; the revocation it made before
// the restore, shown back afterwards, does not cancel that newer request.
func TestRestoredRevocationYieldsToALaterDecision(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	empty := maps.Clone(alice.store) // before alice knew bob
	connect(t, alice, bob, t0, 0)
	now := t0.Add(time.Hour)
	rev, recs, err := alice.book.Revoke(bob.id, now)
	alice.must(recs, err)
	c, recs, err := bob.book.ApplyRevocation(rev, now)
	bob.must(recs, err)

	alice = restored(t, alice, empty)
	now = now.Add(time.Hour)
	_, recs, err = alice.book.OutgoingRequest(bob.id, "A", "again", now)
	alice.must(recs, err)
	_, recs, err = alice.book.ApplyRevocation(c.PeerRevocation, now.Add(time.Minute))
	alice.save(recs)
	wantErr(t, err, ErrReplay)
	got, _ := alice.book.Get(bob.id, now)
	if got.State != StatePendingOut || got.OutRequest == nil {
		t.Fatalf("alice's newer request was cancelled: %s", got.State)
	}
	// The revocation's seq is taken: showing it again is a plain replay,
	// and alice's next revocation of bob comes after it.
	_, _, err = alice.book.ApplyRevocation(c.PeerRevocation, now.Add(time.Minute))
	wantErr(t, err, ErrReplay)
	got, _ = restored(t, alice, alice.store).book.Get(bob.id, now)
	if got.State != StatePendingOut || got.RevokeSeq < c.LastRevocationSeq {
		t.Fatalf("alice's revoke seq %d is below the one bob holds (%d)", got.RevokeSeq, c.LastRevocationSeq)
	}
}

// TestCertificateShownBackToARestoredCopy: a node started on a copy of its
// home taken before a contact was made holds the certificate the peer shows
// back (both signatures hold, its own among them) as a pending request for
// the user, not as a contact: the peer may have been revoked since and keep
// that to itself. Approved, it is the contact again; denied (revoked), the
// peer cannot show it again. A forged, foreign, expired or outdated one is
// refused, as is one older than a decision the user made since.
func TestCertificateShownBackToARestoredCopy(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	old := maps.Clone(alice.store) // before bob
	connect(t, bob, alice, t0, 0)  // alice approves
	c, _ := bob.book.Get(alice.id, t0)

	now := t0.Add(time.Hour)
	alice = restored(t, alice, old)
	wantErr(t, alice.book.Allowed(bob.id, now), ErrNoContact)
	got, ok, recs, err := alice.book.RestoreCertificate(bob.id, "bob", c.Cert, now)
	alice.must(recs, err)
	if ok || got.State != StatePendingIn || !bytes.Equal(got.ShownCert, c.Cert) || got.Handle != "bob" || got.ID == "" {
		t.Fatalf("shown back: taken %v, %s, shown cert kept %v, handle %q, id %q", ok, got.State, got.ShownCert != nil, got.Handle, got.ID)
	}
	wantErr(t, alice.book.Allowed(bob.id, now), ErrNoContact)
	// Kept across a restart; shown again, nothing changes.
	alice = restored(t, alice, alice.store)
	_, ok, recs, err = alice.book.RestoreCertificate(bob.id, "", c.Cert, now)
	if err != nil || ok || len(recs) != 0 {
		t.Fatalf("shown again: taken %v, %d records, %v", ok, len(recs), err)
	}
	// No policy approves it in the user's place, and a request made of the
	// certificate's bytes is not the pending request.
	_, _, err = alice.book.Approve(got.ID, 0, now)
	wantErr(t, err, ErrState)
	_, _, err = alice.book.IncomingRequest(bob.id, c.Cert, true, now)
	wantErr(t, err, ErrAlreadyPending)
	// The user approves: the certificate is active again as it was.
	alice.must(alice.book.ApproveShown(got.ID, now))
	got, _ = alice.book.Get(bob.id, now)
	if got.State != StateActive || got.Seq != c.Seq || !bytes.Equal(got.Cert, c.Cert) || !got.Approver || got.ShownCert != nil {
		t.Fatalf("approved: %s seq %d (want %d) approver %v", got.State, got.Seq, c.Seq, got.Approver)
	}
	wantErr(t, alice.book.Allowed(bob.id, now), nil)
	alice = restored(t, alice, alice.store)
	wantErr(t, alice.book.Allowed(bob.id, now), nil)

	// Denied, it is revoked: bob takes the revocation, and showing the
	// certificate again changes nothing.
	a2 := restored(t, alice, old)
	got, _, recs, err = a2.book.RestoreCertificate(bob.id, "", c.Cert, now)
	a2.must(recs, err)
	_, err = a2.book.Deny(got.ID, now)
	wantErr(t, err, ErrState)
	rev, recs, err := a2.book.Revoke(bob.id, now)
	a2.must(recs, err)
	b2, recs, err := bob.book.ApplyRevocation(rev, now)
	if err != nil || b2.State != StateRevoked {
		t.Fatalf("bob takes the revocation of the certificate shown back: %s %v", b2.State, err)
	}
	_, _, _, err = a2.book.RestoreCertificate(bob.id, "", c.Cert, now.Add(time.Minute))
	wantErr(t, err, ErrReplay)
	wantErr(t, a2.book.Allowed(bob.id, now.Add(time.Minute)), ErrRevoked)

	// A certificate with a byte of a signature changed; one between other
	// peers; one shown by a peer it is not with; an expired one.
	bad := bytes.Clone(c.Cert)
	bad[len(bad)-3] ^= 1
	_, _, _, err = restored(t, alice, old).book.RestoreCertificate(bob.id, "", bad, now)
	wantErr(t, err, ErrBadSignature)
	carol := newNode(t, Policy{})
	connect(t, carol, bob, t0, 0)
	cb, _ := carol.book.Get(bob.id, t0)
	_, _, _, err = restored(t, alice, old).book.RestoreCertificate(bob.id, "", cb.Cert, now)
	wantErr(t, err, ErrWrongPeers)
	_, _, _, err = restored(t, alice, old).book.RestoreCertificate(carol.id, "", c.Cert, now)
	wantErr(t, err, ErrWrongPeers)
	_, _, _, err = restored(t, alice, old).book.RestoreCertificate(bob.id, "", c.Cert, c.Expires.Add(time.Second))
	wantErr(t, err, ErrExpired)
}

// TestRevokedPeerShowingItsCertificate: bob, revoked by alice after her
// last copy, keeps the revocation to himself and shows the certificate to
// her restored copy: she holds it for the user to decide, and does not
// allow him.
func TestRevokedPeerShowingItsCertificate(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	old := maps.Clone(alice.store)
	connect(t, bob, alice, t0, 0)
	c, _ := bob.book.Get(alice.id, t0)
	rev, recs, err := alice.book.Revoke(bob.id, t0.Add(time.Hour))
	alice.must(recs, err)
	_, recs, err = bob.book.ApplyRevocation(rev, t0.Add(time.Hour))
	bob.must(recs, err)
	now := t0.Add(2 * time.Hour)
	alice = restored(t, alice, old)
	got, ok, recs, err := alice.book.RestoreCertificate(bob.id, "", c.Cert, now)
	alice.must(recs, err)
	if ok || got.State != StatePendingIn {
		t.Fatalf("revoked peer's certificate: taken %v, %s", ok, got.State)
	}
	wantErr(t, alice.book.Allowed(bob.id, now), ErrNoContact)
}

// TestShownCertificateEdges: a newer certificate shown while the book's
// own is live leaves the contact as it is; one shown while a revocation's
// cool-down runs is refused; a waiting one drops a stale offer, and this
// node's own revocation shown back after it ends it.
func TestShownCertificateEdges(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	connect(t, bob, alice, t0, time.Hour)
	first := maps.Clone(alice.store)
	c1, _ := alice.book.Get(bob.id, t0)
	later := t0.Add(2 * time.Hour)
	// A second certificate both signed, from t0+10m for a day.
	payload, err := NewCertPayload(alice.id, bob.id, c1.Scopes, t0.Add(10*time.Minute), t0.Add(24*time.Hour), c1.Seq+1)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := SignCert(alice.priv, payload)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := SignCert(bob.priv, payload)
	if err != nil {
		t.Fatal(err)
	}
	wire2, err := AssembleCert(payload, sa, sb)
	if err != nil {
		t.Fatal(err)
	}
	c2 := Contact{Cert: wire2}
	// alice's copy holds the first, live at t0+30m: the second waits.
	live := restored(t, alice, first)
	_, _, _, err = live.book.RestoreCertificate(bob.id, "", c2.Cert, t0.Add(30*time.Minute))
	wantErr(t, err, ErrAlreadyContact)
	wantErr(t, live.book.Allowed(bob.id, t0.Add(30*time.Minute)), nil)
	// Once the first ended, the second waits for the user.
	got, _, recs, err := live.book.RestoreCertificate(bob.id, "", c2.Cert, later.Add(time.Minute))
	live.must(recs, err)
	if got.State != StatePendingIn || got.Offer != nil {
		t.Fatalf("after the first ended: %s, offer kept %v", got.State, got.Offer != nil)
	}
	// alice's own revocation of the second, shown back now, ends it.
	rev, err := NewRevocation(alice.priv, bob.id, c1.Seq+1, nextSeq(c1.RevokeSeq, later.Add(time.Hour)), later.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got, recs, err = live.book.ApplyRevocation(rev, later.Add(2*time.Hour))
	live.must(recs, err)
	if got.State != StateRevoked || got.ShownCert != nil {
		t.Fatalf("own revocation after the show: %s, shown cert kept %v", got.State, got.ShownCert != nil)
	}
	// Within the revocation's cool-down a certificate shown is refused.
	_, _, _, err = live.book.RestoreCertificate(bob.id, "", c2.Cert, later.Add(3*time.Hour))
	if !errors.Is(err, ErrDenied) && !errors.Is(err, ErrReplay) {
		t.Fatalf("shown during the cool-down: %v", err)
	}
}

// TestLostCountersignatureShownBack: the approver's offer was
// countersigned and the countersignature lost; the requester shows the
// certificate, which completes the offer the approver holds: taken at once
// (its latest decision), before a restart as after.
func TestLostCountersignatureShownBack(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	now := t0.Add(123456 * time.Nanosecond)
	wire, recs, err := alice.book.OutgoingRequest(bob.id, "alice", "", now)
	alice.must(recs, err)
	in, recs, err := bob.book.IncomingRequest(alice.id, wire, false, now)
	bob.must(recs, err)
	a, recs, err := bob.book.Approve(in.ID, 0, now)
	bob.must(recs, err)
	_, recs, err = alice.book.Countersign(bob.id, "", a.Payload, a.Sig, now)
	alice.must(recs, err) // its answer is lost
	ca, _ := alice.book.Get(bob.id, now)
	later := now.Add(time.Minute)
	for _, b := range []*tnode{restored(t, bob, bob.store), bob} {
		got, ok, recs, err := b.book.RestoreCertificate(alice.id, "", ca.Cert, later)
		b.must(recs, err)
		if !ok || got.State != StateActive || !got.Approver {
			t.Fatalf("the lost countersignature: taken %v, %s, approver %v", ok, got.State, got.Approver)
		}
	}
}
