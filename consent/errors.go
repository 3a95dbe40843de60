package consent

import (
	"errors"

	"github.com/parley-mesh/parley/identity"
)

var (
	// ErrBadSignature is returned when a request, certificate, revocation or
	// countersignature is not signed by the peer it claims. It is the same
	// value as identity.ErrBadSignature, so errors.Is works with either.
	ErrBadSignature = identity.ErrBadSignature
	// ErrMalformed is returned when wire bytes do not decode, are not
	// canonical CBOR, or break a field rule (peer ID, nonce, times, scopes).
	ErrMalformed = errors.New("consent: malformed")
	// ErrTooLong is returned when a handle, note or other text is over its limit.
	ErrTooLong = errors.New("consent: text too long")
	// ErrFrameTooLarge is returned when a frame or message is larger than
	// the limit given to ReadFrame or MaxFrame.
	ErrFrameTooLarge = errors.New("consent: frame too large")
	// ErrWrongPeers is returned when a certificate, request or revocation
	// names other peers than the ones it is checked for.
	ErrWrongPeers = errors.New("consent: certificate is for other peers")
	// ErrNotYetValid is returned when a certificate's not_before is in the future.
	ErrNotYetValid = errors.New("consent: certificate not yet valid")
	// ErrExpired is returned when a certificate's not_after has passed.
	ErrExpired = errors.New("consent: certificate expired")
	// ErrRevoked is returned by Allowed when the contact was revoked by either side.
	ErrRevoked = errors.New("consent: contact revoked")
	// ErrNoContact is returned when there is no contact with a peer, or it has
	// no certificate (pending or denied).
	ErrNoContact = errors.New("consent: not a contact")
	// ErrNotFound is returned when no pending request has the given ID.
	ErrNotFound = errors.New("consent: no such request")
	// ErrState is returned when an operation does not fit the contact's state,
	// for example Deny after Approve, or Complete with no approval outstanding.
	ErrState = errors.New("consent: operation does not fit contact state")
	// ErrDenied is returned when a peer whose request was denied (or who was
	// revoked) asks again before its DeniedUntil.
	ErrDenied = errors.New("consent: denied, try again later")
	// ErrTooManyPending is returned when an incoming request would exceed the
	// cap on pending incoming requests.
	ErrTooManyPending = errors.New("consent: too many pending requests")
	// ErrAlreadyPending is returned when a peer that already has a pending
	// request sends a different one.
	ErrAlreadyPending = errors.New("consent: a request from this peer is already pending")
	// ErrAlreadyContact is returned when a request is made between peers that
	// already hold a live certificate.
	ErrAlreadyContact = errors.New("consent: already a contact")
	// ErrNotRequested is returned when an approval arrives from a peer that
	// this node did not ask and holds no certificate with.
	ErrNotRequested = errors.New("consent: approval without a request")
	// ErrReplay is returned when a revocation's seq is not above the last one
	// seen from its issuer, or a certificate's seq is not above the current one.
	ErrReplay = errors.New("consent: replayed or stale seq")
	// ErrRateLimited is returned when a peer sends more contact messages
	// than the node takes in a while; it may try again later.
	ErrRateLimited = errors.New("consent: too many messages, try again later")
	// ErrRemote is returned (wrapped with the matching sentinel, if any) when
	// the peer answered with an error message.
	ErrRemote = errors.New("consent: peer refused")
	// ErrBadRecord is returned by Load for a stored contact record that does
	// not decode or does not fit this node.
	ErrBadRecord = errors.New("consent: bad contact record")
)
