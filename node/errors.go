package node

import "errors"

var (
	// ErrHomeLocked is returned when another running node owns the home.
	ErrHomeLocked = errors.New("node: home is in use by a running node")
	// ErrBadConfig is returned when the Config cannot be used.
	ErrBadConfig = errors.New("node: bad config")
	// ErrListen is returned when the node cannot listen on an address.
	ErrListen = errors.New("node: cannot listen")
	// ErrClosed is returned when a closed node is used.
	ErrClosed = errors.New("node: closed")
	// ErrHomeUnsafe is returned when the home folder belongs to another
	// user, can be written by other users, or holds a socket that is not
	// this user's.
	ErrHomeUnsafe = errors.New("node: unsafe home")
	// ErrIdentityMissing is returned when the key file is gone from a home
	// that holds its node's database; Config.NewIdentity chooses a new one.
	ErrIdentityMissing = errors.New("node: identity key missing")
	// ErrIdentityMismatch is returned when the key is not the identity the
	// database was made for.
	ErrIdentityMismatch = errors.New("node: identity key does not match the database")
	// ErrDataMissing is returned when the database is gone from a home that
	// ran a node before; Config.Recover starts anew.
	ErrDataMissing = errors.New("node: database missing")
	// ErrStoreDamaged is returned when the database cannot be opened because
	// it is damaged (it also wraps store.ErrCorrupt); Config.Recover sets it
	// aside and starts anew.
	ErrStoreDamaged = errors.New("node: database damaged")
)
