package consent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	msgs := []Message{
		{Kind: KindRequest, Request: []byte{1, 2, 3}},
		{Kind: KindAck, ID: "abc"},
		{Kind: KindDeny, ID: "abc"},
	}
	for _, m := range msgs {
		if err := WriteFrame(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	// A reader that is not an io.ByteReader must not over-read.
	r := io.MultiReader(&buf)
	for _, want := range msgs {
		b, err := ReadFrame(r, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := DecodeMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind != want.Kind || m.ID != want.ID || !bytes.Equal(m.Request, want.Request) {
			t.Fatalf("got %+v, want %+v", m, want)
		}
	}
	if _, err := ReadFrame(r, 0); err != io.EOF {
		t.Fatalf("at end: %v", err)
	}

	big := Message{Kind: KindRequest, Request: make([]byte, MaxFrame)}
	wantErr(t, WriteFrame(io.Discard, big), ErrFrameTooLarge)

	for _, tc := range []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"length over max", binary.AppendUvarint(nil, MaxFrame+1), 0, ErrFrameTooLarge},
		{"length over caller max", append(binary.AppendUvarint(nil, 100), make([]byte, 100)...), 99, ErrFrameTooLarge},
		{"huge length", binary.AppendUvarint(nil, 1<<62), 0, ErrFrameTooLarge},
		{"varint overflow", bytes.Repeat([]byte{0xff}, 11), 0, nil},
		{"truncated body", append(binary.AppendUvarint(nil, 10), 1, 2), 0, io.ErrUnexpectedEOF},
		{"truncated length", []byte{0x80}, 0, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFrame(bytes.NewReader(tc.in), tc.max)
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecodeMessage(t *testing.T) {
	enc := func(v any) []byte {
		b, err := encMode.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"ack", enc(Message{Kind: KindAck}), nil},
		{"approve", enc(Message{Kind: KindApprove, ID: "x", Payload: []byte{1}, Sig: []byte{2}, Handle: "Bob"}), nil},
		{"error", enc(Message{Kind: KindError, Code: "denied", Text: "no\nthanks"}), nil},
		{"empty", nil, ErrMalformed},
		{"not cbor", []byte{0xff, 0x00}, ErrMalformed},
		{"trailing bytes", append(enc(Message{Kind: KindAck}), 0), ErrMalformed},
		{"unknown kind", enc(Message{Kind: "hug"}), ErrMalformed},
		{"missing field", enc(Message{Kind: KindApprove, ID: "x", Sig: []byte{2}}), ErrMalformed},
		{"extra field", enc(Message{Kind: KindDeny, ID: "x", Sig: []byte{2}}), ErrMalformed},
		{"unknown field", enc(map[string]any{"k": "ack", "zz": 1}), ErrMalformed},
		{"duplicate key", []byte{0xa2, 0x61, 'k', 0x63, 'a', 'c', 'k', 0x61, 'k', 0x63, 'a', 'c', 'k'}, ErrMalformed},
		{"not a map", enc([]int{1}), ErrMalformed},
		{"wrong type", enc(map[string]any{"k": 7}), ErrMalformed},
		{"long id", enc(Message{Kind: KindDeny, ID: strings.Repeat("i", 65)}), ErrTooLong},
		{"long handle", enc(Message{Kind: KindApprove, ID: "x", Payload: []byte{1}, Sig: []byte{2}, Handle: strings.Repeat("h", 65)}), ErrTooLong},
		{"control in handle", enc(Message{Kind: KindApprove, ID: "x", Payload: []byte{1}, Sig: []byte{2}, Handle: "\x1b]0;"}), ErrMalformed},
		{"oversized", enc(Message{Kind: KindRequest, Request: make([]byte, MaxFrame)}), ErrFrameTooLarge},
		{"tag", append([]byte{0xc1}, enc(Message{Kind: KindAck})...), ErrMalformed},
		{"deep nesting", bytes.Repeat([]byte{0x81}, 100), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeMessage(tc.in)
			wantErr(t, err, tc.want)
		})
	}
}

func TestErrorMessage(t *testing.T) {
	for _, sentinel := range []error{ErrDenied, ErrTooManyPending, ErrAlreadyPending, ErrNotRequested, ErrBadSignature, ErrReplay, ErrRateLimited, ErrNotYetValid} {
		err := errorsWrap(sentinel)
		m := ErrorMessage("id1", err)
		var buf bytes.Buffer
		if err := WriteFrame(&buf, m); err != nil {
			t.Fatal(err)
		}
		b, _ := ReadFrame(&buf, 0)
		got, err := DecodeMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		e := got.Err()
		if !errors.Is(e, ErrRemote) || !errors.Is(e, sentinel) {
			t.Fatalf("%v: round trip gave %v", sentinel, e)
		}
	}
	m := ErrorMessage("", errors.New("boom \x1b[2J"+strings.Repeat("x", 2000)))
	if m.Code != "internal" || len(m.Text) > maxText || strings.ContainsRune(m.Text, 0x1b) {
		t.Fatalf("%+v", m)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if (&Message{Kind: KindAck}).Err() != nil {
		t.Fatal("ack is an error")
	}
}

func errorsWrap(err error) error {
	return &wrapped{err}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "consent: something: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

func TestCanonicalOnly(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	payload, _ := NewCertPayload(alice.id, bob.id, DefaultScopes, t0, t0.Add(time.Hour), 1)
	good := seal(t, payload, alice, bob)
	var w certWire
	if err := decMode.Unmarshal(good, &w); err != nil {
		t.Fatal(err)
	}
	// The same fields in declaration order, not core deterministic order.
	unsorted, err := cbor.EncOptions{}.EncMode()
	if err != nil {
		t.Fatal(err)
	}
	b, err := unsorted.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(b, good) {
		t.Fatal("test encodes canonically")
	}
	_, err = DecodeCertificate(b)
	wantErr(t, err, ErrMalformed)

	// A payload with a non-minimal integer, signed by both, is refused.
	var cp certPayload
	if err := decMode.Unmarshal(payload, &cp); err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(payload, []byte("seq"))
	if i < 0 || payload[i+3] != 0x01 {
		t.Fatalf("seq not found in %x", payload)
	}
	long := append(append(append([]byte(nil), payload[:i+3]...), 0x18, 0x01), payload[i+4:]...)
	sa, _ := alice.priv.Sign(append([]byte("parley-contact-cert\x00"), long...))
	sb, _ := bob.priv.Sign(append([]byte("parley-contact-cert\x00"), long...))
	wire, _ := encMode.Marshal(certWire{Payload: long, SigA: sa, SigB: sb})
	_, err = DecodeCertificate(wire)
	wantErr(t, err, ErrMalformed)
	// Unsorted or duplicate scopes are refused by the payload rules.
	cp.Scopes = []string{"invite", "ask"}
	b, _ = encMode.Marshal(&cp)
	_, err = parseCertPayload(b)
	wantErr(t, err, ErrMalformed)
}

func TestRevocationDecode(t *testing.T) {
	alice, bob := newNode(t, Policy{}), newNode(t, Policy{})
	wire, err := NewRevocation(alice.priv, bob.id, 3, 9, t0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeRevocation(wire)
	if err != nil {
		t.Fatal(err)
	}
	if r.Issuer != alice.id || r.Subject != bob.id || r.CertSeq != 3 || r.Seq != 9 || !r.Time.Equal(t0) {
		t.Fatalf("%+v", r)
	}
	_, err = NewRevocation(alice.priv, alice.id, 1, 1, t0)
	wantErr(t, err, ErrWrongPeers)
	// Signed by bob but naming alice as issuer.
	p := revocationPayload{Issuer: []byte(alice.id), Subject: []byte(bob.id), CertSeq: 1, Time: 1, Seq: 1}
	forged, _ := sealOne(bob.priv, "parley-contact-revocation", &p)
	_, err = DecodeRevocation(forged)
	wantErr(t, err, ErrBadSignature)
	// A request's signature does not verify as a revocation's.
	crossed, _ := sealOne(alice.priv, "parley-contact-request", &p)
	_, err = DecodeRevocation(crossed)
	wantErr(t, err, ErrBadSignature)
}
