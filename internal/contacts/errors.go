package contacts

import "errors"

var (
	// ErrUnreachable is returned when a peer cannot be dialled or does not
	// answer; what was to be sent is kept and sent again later.
	ErrUnreachable = errors.New("contacts: peer cannot be reached")
	// ErrUnknown is returned when a request ID or peer names no contact.
	ErrUnknown = errors.New("contacts: no such contact or request")
	// ErrBadInput is returned for a target, duration or note the service
	// cannot use.
	ErrBadInput = errors.New("contacts: bad input")
	// ErrClosed is returned when the service has stopped.
	ErrClosed = errors.New("contacts: closed")
)
