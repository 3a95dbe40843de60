package consent

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Limits on signed records.
const (
	MaxHandle = 64  // runes in a handle (display name)
	MaxNote   = 500 // runes in a request note
	MaxScopes = 16  // scopes in a certificate
	maxScope  = 32  // bytes in one scope name
	maxSig    = 256 // bytes in one signature
	nonceLen  = 16  // bytes of request nonce
)

var (
	encMode cbor.EncMode // CBOR core deterministic encoding
	decMode cbor.DecMode // strict decoding of wire bytes
	recMode cbor.DecMode // decoding of stored contact records (unknown fields allowed)
)

func init() {
	var err error
	if encMode, err = cbor.CoreDetEncOptions().EncMode(); err != nil {
		panic("consent: cbor encoder: " + err.Error())
	}
	strict := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		MaxNestedLevels:   4,
		MaxArrayElements:  MaxScopes,
		MaxMapPairs:       16,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
		UTF8:              cbor.UTF8RejectInvalid,
	}
	if decMode, err = strict.DecMode(); err != nil {
		panic("consent: cbor decoder: " + err.Error())
	}
	rec := strict
	rec.MaxMapPairs = 64
	rec.ExtraReturnErrors = cbor.ExtraDecErrorNone
	if recMode, err = rec.DecMode(); err != nil {
		panic("consent: cbor decoder: " + err.Error())
	}
}

// signedWire is the wire form of a request or revocation: the canonical
// CBOR payload and one signature over it.
type signedWire struct {
	Payload []byte `cbor:"payload"`
	Sig     []byte `cbor:"sig"`
}

// decodeCanonical decodes b strictly into v and checks that b is exactly
// the deterministic encoding of v, so every value has one wire form.
func decodeCanonical(b []byte, v any) error {
	if err := decMode.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	re, err := encMode.Marshal(v)
	if err != nil || !bytes.Equal(re, b) {
		return fmt.Errorf("%w: not canonical CBOR", ErrMalformed)
	}
	return nil
}

// decodeSigned decodes the outer {payload, sig} envelope.
func decodeSigned(b []byte) (signedWire, error) {
	var w signedWire
	if err := decodeCanonical(b, &w); err != nil {
		return w, err
	}
	if len(w.Payload) == 0 {
		return w, fmt.Errorf("%w: empty payload", ErrMalformed)
	}
	if err := checkSig(w.Sig); err != nil {
		return w, err
	}
	return w, nil
}

func checkSig(sig []byte) error {
	if len(sig) == 0 || len(sig) > maxSig {
		return fmt.Errorf("%w: signature of %d bytes", ErrMalformed, len(sig))
	}
	return nil
}

func peerFromBytes(field string, b []byte) (peer.ID, error) {
	id, err := peer.IDFromBytes(b)
	if err != nil {
		return "", fmt.Errorf("%w: %s: bad peer id: %v", ErrMalformed, field, err)
	}
	return id, nil
}

// checkText checks that s is valid UTF-8 of at most max runes and holds no
// control characters (newline and tab are allowed when multiline is set).
func checkText(field, s string, max int, multiline bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrMalformed, field)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return fmt.Errorf("%w: %s has %d characters, at most %d allowed", ErrTooLong, field, n, max)
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t')) {
			return fmt.Errorf("%w: %s holds control character %U", ErrMalformed, field, r)
		}
	}
	return nil
}

// checkScope checks one scope name: 1–32 characters of [a-z0-9._-].
func checkScope(s string) error {
	if s == "" || len(s) > maxScope {
		return fmt.Errorf("%w: scope %q: want 1 to %d characters", ErrMalformed, s, maxScope)
	}
	if strings.TrimLeft(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") != "" {
		return fmt.Errorf("%w: scope %q: use a-z, 0-9, '.', '_', '-'", ErrMalformed, s)
	}
	return nil
}
