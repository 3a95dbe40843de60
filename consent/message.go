package consent

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/parley-mesh/parley/internal/frame"
)

// ProtocolID is the libp2p stream protocol for contact exchanges.
const ProtocolID = "/parley/contact/1"

// MaxFrame is the largest frame (CBOR bytes, without the length prefix) on
// ProtocolID, and the largest request, certificate or revocation.
const MaxFrame = 16 << 10

// Kind is the type of a Message.
type Kind string

// Message kinds. See the package documentation for the exchanges.
const (
	KindRequest     Kind = "request"     // Request: a request's wire bytes
	KindAck         Kind = "ack"         // ID (optional): the message was taken
	KindError       Kind = "error"       // Code, Text, ID (optional): the message was refused
	KindApprove     Kind = "approve"     // ID, Payload, Sig (approver's), Handle (optional)
	KindCountersign Kind = "countersign" // ID, Sig (requester's)
	KindDeny        Kind = "deny"        // ID: the request was denied
	KindRevoke      Kind = "revoke"      // Revocation: a revocation's wire bytes
	KindCert        Kind = "cert"        // Cert (the sealed certificate the sender holds), Handle (optional)
)

// Message is one frame on ProtocolID. Which fields a kind carries is listed
// at the Kind constants; DecodeMessage rejects missing and extra ones.
type Message struct {
	Kind       Kind   `cbor:"k"`
	ID         string `cbor:"id,omitempty"`
	Request    []byte `cbor:"req,omitempty"`
	Payload    []byte `cbor:"payload,omitempty"`
	Sig        []byte `cbor:"sig,omitempty"`
	Handle     string `cbor:"handle,omitempty"`
	Revocation []byte `cbor:"rev,omitempty"`
	Cert       []byte `cbor:"cert,omitempty"`
	Code       string `cbor:"code,omitempty"`
	Text       string `cbor:"text,omitempty"`
}

// Message fields, as bits, for the per-kind rules.
const (
	fID = 1 << iota
	fRequest
	fPayload
	fSig
	fHandle
	fRevocation
	fCode
	fText
	fCert
)

// kindFields lists, per kind, the required and the allowed fields.
var kindFields = map[Kind]struct{ need, may int }{
	KindRequest:     {fRequest, fRequest},
	KindAck:         {0, fID},
	KindError:       {fCode, fCode | fText | fID},
	KindApprove:     {fID | fPayload | fSig, fID | fPayload | fSig | fHandle},
	KindCountersign: {fID | fSig, fID | fSig},
	KindDeny:        {fID, fID},
	KindRevoke:      {fRevocation, fRevocation},
	KindCert:        {fCert, fCert | fHandle},
}

const (
	maxID   = 64   // bytes in a message ID
	maxCode = 64   // bytes in an error code
	maxText = 1000 // bytes in an error text
)

func (m *Message) fields() int {
	f := 0
	for _, x := range []struct {
		set bool
		bit int
	}{
		{m.ID != "", fID}, {len(m.Request) > 0, fRequest}, {len(m.Payload) > 0, fPayload}, {len(m.Sig) > 0, fSig},
		{m.Handle != "", fHandle}, {len(m.Revocation) > 0, fRevocation}, {m.Code != "", fCode}, {m.Text != "", fText},
		{len(m.Cert) > 0, fCert},
	} {
		if x.set {
			f |= x.bit
		}
	}
	return f
}

// Validate checks the message's kind, fields and limits.
func (m *Message) Validate() error {
	rule, ok := kindFields[m.Kind]
	if !ok {
		return fmt.Errorf("%w: unknown message kind %q", ErrMalformed, m.Kind)
	}
	f := m.fields()
	if f&rule.need != rule.need {
		return fmt.Errorf("%w: %s message lacks a field", ErrMalformed, m.Kind)
	}
	if f&^rule.may != 0 {
		return fmt.Errorf("%w: %s message has extra fields", ErrMalformed, m.Kind)
	}
	if len(m.ID) > maxID {
		return fmt.Errorf("%w: id of %d bytes", ErrTooLong, len(m.ID))
	}
	if len(m.Code) > maxCode {
		return fmt.Errorf("%w: code of %d bytes", ErrTooLong, len(m.Code))
	}
	if len(m.Text) > maxText {
		return fmt.Errorf("%w: text of %d bytes", ErrTooLong, len(m.Text))
	}
	if err := checkText("id", m.ID, maxID, false); err != nil {
		return err
	}
	if err := checkText("code", m.Code, maxCode, false); err != nil {
		return err
	}
	if err := checkText("handle", m.Handle, MaxHandle, false); err != nil {
		return err
	}
	if err := checkText("text", m.Text, maxText, true); err != nil {
		return err
	}
	if len(m.Sig) > maxSig {
		return fmt.Errorf("%w: signature of %d bytes", ErrMalformed, len(m.Sig))
	}
	return nil
}

// DecodeMessage decodes and validates one frame's bytes. Nested requests,
// payloads and revocations are checked by the Book, not here.
func DecodeMessage(b []byte) (*Message, error) {
	if len(b) > MaxFrame {
		return nil, fmt.Errorf("consent: decode message: %w: %d bytes, at most %d", ErrFrameTooLarge, len(b), MaxFrame)
	}
	var m Message
	if err := decMode.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("consent: decode message: %w: %v", ErrMalformed, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("consent: decode message: %w", err)
	}
	return &m, nil
}

// WriteFrame writes v as one frame: its CBOR encoding prefixed with the
// length as a uvarint. It fails with ErrFrameTooLarge above MaxFrame.
func WriteFrame(w io.Writer, v any) error {
	b, err := encMode.Marshal(v)
	if err != nil {
		return fmt.Errorf("consent: write frame: %w", err)
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("consent: write frame: %w: %d bytes", ErrFrameTooLarge, len(b))
	}
	if err := frame.Write(w, b); err != nil {
		return fmt.Errorf("consent: write frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame written by WriteFrame and returns its CBOR
// bytes. It never reads past the frame. max caps the frame size (MaxFrame
// if max ≤ 0). A clean end of stream before the frame returns io.EOF.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	if max <= 0 {
		max = MaxFrame
	}
	b, err := frame.Read(r, max)
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case errors.Is(err, frame.ErrTooLarge):
		return nil, fmt.Errorf("consent: read frame: %w: %w", ErrFrameTooLarge, err)
	case err != nil:
		return nil, fmt.Errorf("consent: read frame: %w", err)
	}
	return b, nil
}

// errorCodes maps sentinels to the codes of KindError messages.
var errorCodes = []struct {
	code string
	err  error
}{
	{"denied", ErrDenied},
	{"too-many-pending", ErrTooManyPending},
	{"already-pending", ErrAlreadyPending},
	{"already-contact", ErrAlreadyContact},
	{"not-requested", ErrNotRequested},
	{"not-found", ErrNotFound},
	{"replay", ErrReplay},
	{"wrong-peers", ErrWrongPeers},
	{"bad-signature", ErrBadSignature},
	{"too-long", ErrTooLong},
	{"too-large", ErrFrameTooLarge},
	{"expired", ErrExpired},
	{"not-yet-valid", ErrNotYetValid},
	{"revoked", ErrRevoked},
	{"rate-limited", ErrRateLimited},
	{"state", ErrState},
	{"no-contact", ErrNoContact},
	{"malformed", ErrMalformed},
}

// ErrorMessage returns the KindError message that answers id with err: the
// code names err's sentinel ("internal" if none) and Text is err's message.
func ErrorMessage(id string, err error) Message {
	code := "internal"
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			code = c.code
			break
		}
	}
	text := ""
	if err != nil {
		text = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) && r != '\n' && r != '\t' {
				return -1
			}
			return r
		}, strings.ToValidUTF8(err.Error(), "?"))
		for len(text) > maxText {
			text = strings.ToValidUTF8(text[:maxText-3], "") + "..."
		}
	}
	if len(id) > maxID {
		id = ""
	}
	return Message{Kind: KindError, ID: id, Code: code, Text: text}
}

// Err returns nil unless m is a KindError message; then an error wrapping
// ErrRemote and, for a known code, the matching sentinel, so that
// errors.Is(m.Err(), ErrDenied) works on the requester's side.
func (m *Message) Err() error {
	if m.Kind != KindError {
		return nil
	}
	for _, c := range errorCodes {
		if c.code == m.Code {
			return fmt.Errorf("%w: %w: %s", ErrRemote, c.err, m.Text)
		}
	}
	return fmt.Errorf("%w: %s: %s", ErrRemote, m.Code, m.Text)
}
