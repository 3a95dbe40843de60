package contacts_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/contacts"
)

// rawRequest builds a signed request without consent's checks, as a
// hostile node could (the field names are those of consent's wire format).
func rawRequest(t *testing.T, priv crypto.PrivKey, to peer.ID, note string) []byte {
	t.Helper()
	from, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	payload, err := em.Marshal(struct {
		From   []byte `cbor:"from"`
		To     []byte `cbor:"to"`
		Handle string `cbor:"handle"`
		Note   string `cbor:"note"`
		Time   int64  `cbor:"time"`
		Nonce  []byte `cbor:"nonce"`
	}{[]byte(from), []byte(to), "mallory", note, time.Now().UnixMilli(), nonce})
	if err != nil {
		t.Fatal(err)
	}
	sig, err := identity.Sign(priv, identity.DomainContactReq, payload)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := em.Marshal(struct {
		Payload []byte `cbor:"payload"`
		Sig     []byte `cbor:"sig"`
	}{payload, sig})
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

// TestBadInputIsRejectedAndCounted plays node 2 as a hostile peer against
// node 1; node 0 is an honest third party.
func TestBadInputIsRejectedAndCounted(t *testing.T) {
	nt := startNet(t, 3)
	nt.ConnectAll()
	const B, M = 1, 2
	b, m := nt.ID(B), nt.ID(M)
	kM, kA := loadKey(t, nt, M), loadKey(t, nt, 0)
	other, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()

	check := func(name, reason string, msg consent.Message, want error) {
		t.Helper()
		before := rejected(t, nt, B, reason)
		ans := send(t, nt, M, B, msg)
		if err := ans.Err(); err == nil {
			t.Fatalf("%s: accepted (%+v)", name, ans)
		} else {
			wantErr(t, err, want)
		}
		if got := rejected(t, nt, B, reason); got != before+1 {
			t.Fatalf("%s: rejected{reason=%q} went from %v to %v", name, reason, before, got)
		}
	}

	// An oversized note, validly signed: refused, nothing stored.
	check("oversized note", "too_long",
		consent.Message{Kind: consent.KindRequest, Request: rawRequest(t, kM, b, strings.Repeat("n", consent.MaxNote+1))}, consent.ErrTooLong)
	// A request signed by someone else than its sender.
	check("request of another peer", "wrong_peers",
		consent.Message{Kind: consent.KindRequest, Request: rawRequest(t, kA, b, "hi")}, consent.ErrWrongPeers)
	if _, ok := nt.Node(B).Contacts().Book().Get(m, time.Now()); ok {
		t.Fatal("a refused request was stored")
	}

	// B asks M, so approvals from M are expected; bad ones are refused.
	if _, err := nt.Node(B).Contacts().Request(context.Background(), peer.AddrInfo{ID: m}, "hello"); err != nil {
		t.Fatal(err)
	}
	approve := func(signer crypto.PrivKey, p, q peer.ID, from, until time.Time) consent.Message {
		payload, err := consent.NewCertPayload(p, q, consent.DefaultScopes, from, until, uint64(time.Now().UnixMilli()))
		if err != nil {
			t.Fatal(err)
		}
		sig, err := identity.Sign(signer, identity.DomainContactCert, payload)
		if err != nil {
			t.Fatal(err)
		}
		return consent.Message{Kind: consent.KindApprove, ID: "x", Payload: payload, Sig: sig}
	}
	hour := time.Hour
	check("forged certificate", "bad_signature", approve(other, b, m, now.Add(-hour), now.Add(hour)), consent.ErrBadSignature)
	check("certificate for other peers", "wrong_peers", approve(kM, nt.ID(0), m, now.Add(-hour), now.Add(hour)), consent.ErrWrongPeers)
	check("expired certificate", "expired", approve(kM, b, m, now.Add(-2*hour), now.Add(-hour)), consent.ErrExpired)
	check("not yet valid certificate", "not_yet_valid", approve(kM, b, m, now.Add(hour), now.Add(2*hour)), consent.ErrNotYetValid)
	c, _ := nt.Node(B).Contacts().Book().Get(m, time.Now())
	if c.State != consent.StatePendingOut || c.Cert != nil {
		t.Fatalf("bad approvals changed B's contact: %s", c.State)
	}
	if err := nt.Node(B).Contacts().CanInvite(m); err == nil {
		t.Fatal("invite allowed after bad approvals")
	}

	// A revocation from a stranger, then garbage and an oversized frame.
	rev, err := consent.NewRevocation(other, b, 1, 1, now)
	if err != nil {
		t.Fatal(err)
	}
	check("revocation from a stranger", "no_contact", consent.Message{Kind: consent.KindRevoke, Revocation: rev}, consent.ErrNoContact)
	check("an answer as opener", "malformed", consent.Message{Kind: consent.KindAck}, consent.ErrMalformed)
	before := rejected(t, nt, B, "too_large")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := nt.Node(M).Host().NewStream(ctx, b, consent.ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = s.Write(binary.AppendUvarint(nil, consent.MaxFrame+1))
	_, _ = s.Write(bytes.Repeat([]byte{0}, 64))
	_ = s.CloseWrite()
	frame, err := consent.ReadFrame(s, 0)
	s.Close()
	if err != nil {
		t.Fatalf("oversized frame: no answer: %v", err)
	}
	if ans, err := consent.DecodeMessage(frame); err != nil || ans.Code != "too-large" {
		t.Fatalf("oversized frame answered %+v, %v", ans, err)
	}
	if rejected(t, nt, B, "too_large") != before+1 {
		t.Fatal("oversized frame not counted")
	}

	// A flood of requests from M: one is kept, the rest refused as
	// already pending, then rate-limited.
	pending := rejected(t, nt, B, "already_pending")
	limited := rejected(t, nt, B, "rate_limited")
	accepted := 0
	for range 40 {
		ans := send(t, nt, M, B, consent.Message{Kind: consent.KindRequest, Request: rawRequest(t, kM, b, "let me in")})
		if ans.Err() == nil {
			accepted++
		}
	}
	if accepted != 1 {
		t.Fatalf("%d of the flood's requests accepted, want 1", accepted)
	}
	if rejected(t, nt, B, "already_pending") <= pending || rejected(t, nt, B, "rate_limited") <= limited {
		t.Fatal("flood not counted as already_pending and rate_limited")
	}
	n := 0
	for _, e := range nt.Node(B).Contacts().List() {
		if e.PeerID == m {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("B holds %d contacts for M", n)
	}
	if _, err := contacts.ParseExpires("-3d"); err == nil {
		t.Fatal("negative validity accepted")
	}
}

func TestParseExpires(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true},
		{"90d", 90 * 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"36h", 36 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true},
		{"0d", 0, false},
		{"-1h", 0, false},
		{"500ms", 0, false},
		{"d", 0, false},
		{"90days", 0, false},
		{"40000d", 0, false},
		{"1e300d", 0, false},
		{"NaNd", 0, false},
	} {
		got, err := contacts.ParseExpires(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseExpires(%q) = %v, %v", tc.in, got, err)
		}
	}
}
