package consent

import (
	"errors"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
)

func TestOrgRecords(t *testing.T) {
	orgKey, org := newKey(t)
	otherKey, other := newKey(t)
	_, member := newKey(t)
	cert, err := NewOrgRecord(orgKey, OrgRecord{Name: "Acme", Kind: OrgMember, Subject: member, Handle: "ann",
		NotBefore: t0, NotAfter: t0.Add(time.Hour), Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseOrgRecord(cert)
	if err != nil {
		t.Fatal(err)
	}
	if r.Org != org || r.Subject != member || r.Handle != "ann" || r.Group() != 'm' || !r.LiveAt(t0) || r.LiveAt(t0.Add(time.Hour)) {
		t.Fatalf("parsed %+v", r)
	}
	// A record signed by another key but naming this organisation is forged.
	forged, err := NewOrgRecord(otherKey, OrgRecord{Name: "Acme", Kind: OrgMember, Subject: member,
		NotBefore: t0, NotAfter: t0.Add(time.Hour), Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := decodeSigned(forged)
	var p orgPayload
	if err := decodeCanonical(w.Payload, &p); err != nil {
		t.Fatal(err)
	}
	p.Org = []byte(org)
	w.Payload, _ = encMode.Marshal(&p)
	forged, _ = encMode.Marshal(&w)
	if _, err := ParseOrgRecord(forged); !errors.Is(err, identity.ErrBadSignature) {
		t.Fatalf("forged record: %v", err)
	}
	for name, bad := range map[string]OrgRecord{
		"trust without scopes": {Name: "Acme", Kind: OrgTrust, Subject: other, NotBefore: t0, NotAfter: t0.Add(time.Hour)},
		"no name":              {Kind: OrgRevoke, Subject: member},
		"about itself":         {Name: "Acme", Kind: OrgRevoke, Subject: org},
		"empty validity":       {Name: "Acme", Kind: OrgMember, Subject: member, NotBefore: t0, NotAfter: t0},
		"bad kind":             {Name: "Acme", Kind: "boss", Subject: member},
		"bad scope":            {Name: "Acme", Kind: OrgTrust, Subject: other, Scopes: []string{"x y"}, NotBefore: t0, NotAfter: t0.Add(time.Hour)},
	} {
		if _, err := NewOrgRecord(orgKey, bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	push, err := EncodeOrgRecords([][]byte{cert, forged, []byte("junk")})
	if err != nil {
		t.Fatal(err)
	}
	good, errs, err := DecodeOrgRecords(push)
	if err != nil || len(good) != 1 || len(errs) != 2 {
		t.Fatalf("decode push: %d good, %v, %v", len(good), errs, err)
	}
}

func FuzzParseOrgRecord(f *testing.F) {
	orgKey, _ := newKey(f)
	_, member := newKey(f)
	for _, r := range []OrgRecord{
		{Name: "Acme", Kind: OrgMember, Subject: member, Handle: "ann", NotBefore: t0, NotAfter: t0.Add(time.Hour), Seq: 1},
		{Name: "Acme", Kind: OrgRevoke, Subject: member, Seq: 2},
		{Name: "Acme", Kind: OrgTrust, Subject: member, Scopes: DefaultScopes, NotBefore: t0, NotAfter: t0.Add(time.Hour), Seq: 3},
	} {
		b, err := NewOrgRecord(orgKey, r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		push, _ := EncodeOrgRecords([][]byte{b, b})
		f.Add(push)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseOrgRecord(b); err == nil {
			if _, err := ParseOrgRecord(r.Wire); err != nil {
				t.Fatalf("a parsed record does not parse again: %v", err)
			}
		}
		good, _, err := DecodeOrgRecords(b)
		if err != nil && len(good) > 0 {
			t.Fatal("records with an error")
		}
	})
}
