package discovery

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/canon"
	"github.com/parley-mesh/parley/internal/frame"
)

// signedWire is the wire form of a card and of a presence message: the
// payload bytes and the peer's signature over them.
type signedWire struct {
	Payload []byte `cbor:"1,keyasint"`
	Sig     []byte `cbor:"2,keyasint"`
}

var (
	// encMode is CBOR core deterministic encoding (RFC 8949 §4.2.1).
	encMode = canon.Enc
	// cardDec refuses everything a card never contains.
	cardDec = canon.StrictDec(MaxCapabilities)
	// presenceDec refuses everything a presence message never contains.
	presenceDec = canon.StrictDec(MaxAgents)
)

// unmarshalCanonical decodes b into v with dec and checks that b is exactly
// the deterministic encoding of v.
func unmarshalCanonical(dec cbor.DecMode, b []byte, v any) error {
	if err := dec.Unmarshal(b, v); err != nil {
		return cborErr(err)
	}
	again, err := encMode.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if !bytes.Equal(again, b) {
		return ErrNonCanonical
	}
	return nil
}

// cborErr classes a CBOR decoding error: ErrTooLarge for broken count or
// nesting limits, ErrMalformed for everything else.
func cborErr(err error) error {
	var (
		arr  *cbor.MaxArrayElementsError
		pair *cbor.MaxMapPairsError
		nest *cbor.MaxNestedLevelError
	)
	if errors.As(err, &arr) || errors.As(err, &pair) || errors.As(err, &nest) {
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// seal encodes payload, signs it under domain and returns the wire form.
func seal(priv crypto.PrivKey, domain string, payload any, max int) ([]byte, error) {
	p, err := encMode.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	sig, err := identity.Sign(priv, domain, p)
	if err != nil {
		return nil, err
	}
	wire, err := encMode.Marshal(signedWire{Payload: p, Sig: sig})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(wire) > max {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(wire), max)
	}
	return wire, nil
}

// checkSigner checks that id is an Ed25519 peer ID. Only Ed25519: its peer
// IDs embed the public key, and its signatures cannot be re-shaped by a
// third party, so one signed record has one wire form.
func checkSigner(id peer.ID) error {
	pub, err := id.ExtractPublicKey()
	if err != nil || pub.Type() != crypto.Ed25519 {
		return fmt.Errorf("%w: %q is not an Ed25519 peer id", ErrBadPeer, id)
	}
	return nil
}

// checkSelf checks that id is the peer of priv.
func checkSelf(priv crypto.PrivKey, id peer.ID) error {
	if priv == nil {
		return fmt.Errorf("%w: nil key", ErrMalformed)
	}
	self, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadPeer, err)
	}
	if self != id {
		return fmt.Errorf("%w: peer %s is not the signing key %s", ErrBadPeer, id, self)
	}
	return nil
}

// checkLine checks a short one-line text (handle, role, client): valid
// UTF-8, at most max bytes, no control, format or separator characters
// (which could forge a display), no leading or trailing white space.
func checkLine(s string, max int, what string) error {
	if len(s) > max {
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrTooLarge, what, len(s), max)
	}
	if err := checkChars(s, false); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
	}
	if strings.TrimSpace(s) != s {
		return fmt.Errorf("%w: %s %q has surrounding white space", ErrMalformed, what, s)
	}
	return nil
}

// checkHandle checks a handle on a card by the character rules the user's
// own handle has (config.CheckHandle): a line (checkLine) of printable
// characters (unicode.IsPrint: letters, marks, numbers, punctuation,
// symbols and the ASCII space), so neither unassigned nor private-use code
// points, which show as nothing or as a box, or as an icon in some fonts.
// Characters that show nothing but are printable by that rule (Hangul
// fillers, the blank Braille pattern U+2800, the combining grapheme
// joiner: lookalike.Invisible) pass, as they did before handles refused
// them: an older node's card holding one keeps its name, which the names
// service shows with those characters escaped and its peer ID's tail. The
// user's own handle holds none (config.CheckHandle refuses them, and an
// earlier config's handle is read without them).
func checkHandle(s string) error {
	if err := checkLine(s, MaxText, "handle"); err != nil {
		return err
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: handle %q holds %U, which is not a printable character", ErrMalformed, s, r)
		}
	}
	return nil
}

// checkChars checks that s is valid UTF-8 without control, format or
// separator characters; multiline allows '\n' and '\t'.
func checkChars(s string, multiline bool) error {
	if !utf8.ValidString(s) {
		return errors.New("not UTF-8")
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return fmt.Errorf("character %U not allowed", r)
		}
	}
	return nil
}

// checkCapabilities checks a capability list: at most MaxCapabilities,
// each 1 to MaxCapability characters of [a-z0-9._-], sorted and unique.
func checkCapabilities(caps []string) error {
	if len(caps) > MaxCapabilities {
		return fmt.Errorf("%w: %d capabilities, limit %d", ErrTooLarge, len(caps), MaxCapabilities)
	}
	for i, c := range caps {
		if err := checkCapability(c); err != nil {
			return err
		}
		if i > 0 && caps[i-1] >= c {
			return fmt.Errorf("%w: capabilities not sorted and unique at %d", ErrMalformed, i)
		}
	}
	return nil
}

func checkCapability(c string) error {
	if c == "" || len(c) > MaxCapability {
		return fmt.Errorf("%w: capability %.80q: want 1 to %d characters", ErrMalformed, c, MaxCapability)
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-') {
			return fmt.Errorf("%w: capability %q: character %q (use a-z, 0-9, '.', '_', '-')", ErrMalformed, c, b)
		}
	}
	return nil
}

// WriteFrame writes b as one frame of /parley/presence/1: its length as a
// uvarint, then b. b must be 1 to MaxFrame bytes, typically the output of
// SealPresence. Frame and length go out in one Write.
func WriteFrame(w io.Writer, b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("discovery: write frame: %w: empty frame", ErrMalformed)
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("discovery: write frame: %w: %d bytes, limit %d", ErrTooLarge, len(b), MaxFrame)
	}
	if err := frame.Write(w, b); err != nil {
		return fmt.Errorf("discovery: write frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame: a minimally encoded uvarint length of 1 to
// MaxFrame, then that many bytes, which it returns (run DecodePresence on
// them). It reads nothing beyond the frame and allocates nothing before the
// length is checked. It returns io.EOF, wrapped, if r ends before the frame
// begins, and io.ErrUnexpectedEOF inside it.
func ReadFrame(r io.Reader) ([]byte, error) {
	b, err := readFrame(r, MaxFrame)
	if err != nil {
		return nil, fmt.Errorf("discovery: read frame: %w", err)
	}
	return b, nil
}

func readFrame(r io.Reader, max int) ([]byte, error) {
	b, err := frame.Read(r, max)
	switch {
	case errors.Is(err, frame.ErrTooLarge):
		return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
	case errors.Is(err, frame.ErrMalformed):
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return b, err
}
