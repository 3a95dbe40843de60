package discovery

import (
	"errors"
	"fmt"

	"github.com/parley-mesh/parley/identity"
)

var (
	// ErrTooLarge is returned when a card, a presence message, a frame, a
	// text field or a list is larger than its limit.
	ErrTooLarge = errors.New("discovery: too large")
	// ErrMalformed is returned when bytes do not decode as the expected
	// structure, or a field has the wrong type, length or syntax.
	ErrMalformed = errors.New("discovery: malformed")
	// ErrNonCanonical is returned when a card or presence message is valid
	// CBOR but not in its one canonical encoding.
	ErrNonCanonical = errors.New("discovery: non-canonical encoding")
	// ErrBadVersion is returned when a card or presence message has a
	// version this node does not know.
	ErrBadVersion = errors.New("discovery: unknown version")
	// ErrBadSignature is returned when a card or presence message is not
	// signed by its peer. It wraps identity.ErrBadSignature.
	ErrBadSignature = fmt.Errorf("discovery: bad signature: %w", identity.ErrBadSignature)
	// ErrBadPeer is returned when a card's or presence message's peer is not
	// an Ed25519 peer ID, or (by SealCard and SealPresence) when it is not
	// the signing key's peer.
	ErrBadPeer = errors.New("discovery: bad peer")
	// ErrBadKey is returned when a DHT record key is not
	// /parley-agent/<peer>/<agent> in canonical form.
	ErrBadKey = errors.New("discovery: bad record key")
	// ErrKeyMismatch is returned when a card's peer or agent is not the one
	// named by the record key it is stored under.
	ErrKeyMismatch = errors.New("discovery: card does not match its record key")
	// ErrExpired is returned when a card's expiry is not in the future.
	ErrExpired = errors.New("discovery: card expired")
	// ErrLifetime is returned when a card expires further in the future than
	// MaxCardTTL plus MaxClockSkew.
	ErrLifetime = errors.New("discovery: card lifetime too long")
	// ErrNoValidCard is returned when Select is given no valid card.
	ErrNoValidCard = errors.New("discovery: no valid card")
	// ErrBadQuery is returned when a provider key is asked for an unknown
	// kind or a value that the kind does not allow.
	ErrBadQuery = errors.New("discovery: bad query")
)
