package consent

import (
	"bytes"
	"testing"
	"time"
)

// seeds returns good wire records made by fresh keys.
func seeds(f *testing.F) (req, cert, rev []byte, msgs [][]byte) {
	f.Helper()
	alice, bob := newNode(f, Policy{}), newNode(f, Policy{})
	req, err := NewRequest(alice.priv, bob.id, "Alice", "hello, bob — shall we?", t0)
	if err != nil {
		f.Fatal(err)
	}
	payload, err := NewCertPayload(alice.id, bob.id, DefaultScopes, t0, t0.Add(time.Hour), 42)
	if err != nil {
		f.Fatal(err)
	}
	cert = seal(f, payload, alice, bob)
	rev, err = NewRevocation(alice.priv, bob.id, 42, 7, t0)
	if err != nil {
		f.Fatal(err)
	}
	sig, _ := SignCert(alice.priv, payload)
	for _, m := range []Message{
		{Kind: KindRequest, Request: req},
		{Kind: KindAck, ID: RequestID(req)},
		{Kind: KindApprove, ID: RequestID(req), Payload: payload, Sig: sig, Handle: "Bob"},
		{Kind: KindCountersign, ID: RequestID(req), Sig: sig},
		{Kind: KindDeny, ID: RequestID(req)},
		{Kind: KindRevoke, Revocation: rev},
		{Kind: KindCert, Cert: cert, Handle: "Bob"},
		ErrorMessage("x", ErrDenied),
	} {
		b, err := encMode.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	return req, cert, rev, msgs
}

func FuzzDecodeRequest(f *testing.F) {
	req, cert, rev, _ := seeds(f)
	f.Add(req)
	f.Add(cert)
	f.Add(rev)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		if r.ID != RequestID(b) || !bytes.Equal(r.Wire, b) || r.From == r.To {
			t.Fatalf("inconsistent request %+v", r)
		}
		if err := checkText("note", r.Note, MaxNote, true); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzDecodeCertificate(f *testing.F) {
	req, cert, rev, _ := seeds(f)
	f.Add(cert)
	f.Add(req)
	f.Add(rev)
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCertificate(b)
		if err != nil {
			return
		}
		// A decoded certificate re-assembles to the same bytes.
		again, err := AssembleCert(c.Payload, c.SigB, c.SigA)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-assembly: %v", err)
		}
		if !c.Between(c.A, c.B) || !c.NotBefore.Before(c.NotAfter) {
			t.Fatalf("inconsistent certificate %+v", c)
		}
		_ = c.Check(c.A, c.B, time.UnixMilli(0))
	})
}

func FuzzParseCertPayload(f *testing.F) {
	_, cert, rev, _ := seeds(f)
	c, err := DecodeCertificate(cert)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(c.Payload)
	f.Add(cert)
	f.Add(rev)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCertPayload(b)
		if err != nil {
			return
		}
		// A parsed payload is canonical: rebuilding it gives the same bytes.
		again, err := NewCertPayload(c.A, c.B, c.Scopes, c.NotBefore, c.NotAfter, c.Seq)
		if err != nil || !bytes.Equal(again, b) || !bytes.Equal(c.Payload, b) {
			t.Fatalf("payload does not rebuild: %v", err)
		}
	})
}

func FuzzDecodeRevocation(f *testing.F) {
	req, cert, rev, _ := seeds(f)
	f.Add(rev)
	f.Add(req)
	f.Add(cert)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRevocation(b)
		if err != nil {
			return
		}
		if r.Issuer == r.Subject || r.Seq == 0 || !bytes.Equal(r.Wire, b) {
			t.Fatalf("inconsistent revocation %+v", r)
		}
	})
}

func FuzzDecodeMessage(f *testing.F) {
	_, _, _, msgs := seeds(f)
	for _, m := range msgs {
		f.Add(m)
	}
	f.Add([]byte{0xa1, 0x61, 'k', 0x63, 'a', 'c', 'k'})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		if err != nil {
			return
		}
		// What decodes survives a frame round trip unchanged.
		var buf bytes.Buffer
		if err := WriteFrame(&buf, m); err != nil {
			t.Fatal(err)
		}
		fb, err := ReadFrame(&buf, MaxFrame)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := DecodeMessage(fb)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if m2.Kind != m.Kind || m2.ID != m.ID || !bytes.Equal(m2.Payload, m.Payload) || m2.Text != m.Text || m2.Handle != m.Handle ||
			!bytes.Equal(m2.Cert, m.Cert) || !bytes.Equal(m2.Revocation, m.Revocation) {
			t.Fatalf("round trip changed %+v to %+v", m, m2)
		}
		_ = m.Err()
	})
}

// FuzzContactRecord decodes stored contact records (Load's input): what
// decodes encodes again to bytes that decode to the same contact.
func FuzzContactRecord(f *testing.F) {
	alice, bob := newNode(f, Policy{}), newNode(f, Policy{})
	req, err := NewRequest(alice.priv, bob.id, "Alice", "hi", t0)
	if err != nil {
		f.Fatal(err)
	}
	_, recs, err := bob.book.IncomingRequest(alice.id, req, true, t0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(recs[0].Value)
	c := Contact{Peer: alice.id, State: StatePendingIn, PriorState: StateRevoked, Known: true, Updated: t0, Seq: 3}
	if v, err := c.MarshalBinary(); err == nil {
		f.Add(v)
	}
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Contact
		if err := c.UnmarshalBinary(b); err != nil {
			return
		}
		again, err := c.MarshalBinary()
		if err != nil {
			t.Fatalf("a decoded contact does not encode: %v", err)
		}
		var d Contact
		if err := d.UnmarshalBinary(again); err != nil {
			t.Fatalf("re-encoded contact does not decode: %v", err)
		}
		if d.Peer != c.Peer || d.State != c.State || d.PriorState != c.PriorState || d.Known != c.Known ||
			!bytes.Equal(d.InRequest, c.InRequest) || d.Seq != c.Seq {
			t.Fatalf("round trip changed the contact: %+v → %+v", c, d)
		}
	})
}

// FuzzDecodeOrgRecords: a push of organisation records never panics, and
// every record it yields is signed by its organisation and reads back the
// same.
func FuzzDecodeOrgRecords(f *testing.F) {
	org, member := newNode(f, Policy{}), newNode(f, Policy{})
	var recs [][]byte
	for _, r := range []OrgRecord{
		{Name: "Acme", Kind: OrgMember, Subject: member.id, Handle: "ann", NotBefore: t0, NotAfter: t0.Add(time.Hour), Seq: 1},
		{Name: "Acme", Kind: OrgRevoke, Subject: member.id, Seq: 2},
		{Name: "Acme", Kind: OrgTrust, Subject: member.id, Scopes: []string{ScopeAsk}, NotBefore: t0, NotAfter: t0.Add(time.Hour), Seq: 3},
	} {
		w, err := NewOrgRecord(org.priv, r)
		if err != nil {
			f.Fatal(err)
		}
		recs = append(recs, w)
		f.Add(w)
	}
	push, err := EncodeOrgRecords(recs)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(push)
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseOrgRecord(b); err == nil {
			if !bytes.Equal(r.Wire, b) || r.Org == r.Subject {
				t.Fatalf("record %+v", r)
			}
		}
		got, _, err := DecodeOrgRecords(b)
		if err != nil {
			return
		}
		for _, r := range got {
			again, err := ParseOrgRecord(r.Wire)
			if err != nil || again.Seq != r.Seq || again.Org != r.Org {
				t.Fatalf("a decoded record does not read back: %v", err)
			}
		}
	})
}
