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
)
