package identity

import "errors"

var (
	// ErrKeyPermissions is returned when the key file can be read by group or others.
	ErrKeyPermissions = errors.New("identity: key file is accessible by group or others")
	// ErrKeyType is returned when the key file holds a key that is not Ed25519.
	ErrKeyType = errors.New("identity: key is not Ed25519")
	// ErrBadName is returned when an agent name or room ID does not follow its syntax.
	ErrBadName = errors.New("identity: invalid name")
	// ErrBadSignature is returned when a signature does not verify.
	ErrBadSignature = errors.New("identity: bad signature")
)
