package contacts

import "errors"

// The sentinels that the service's operations wrap ("contacts: approve
// REF: ...") carry no "contacts: " of their own, so that an error says its
// context once.
var (
	// ErrUnreachable is returned when a peer cannot be dialled or does not
	// answer; what was to be sent is kept and sent again later.
	ErrUnreachable = errors.New("peer cannot be reached")
	// ErrUnknown is returned when a request ID or peer names no contact.
	ErrUnknown = errors.New("no such contact or request")
	// ErrBadInput is returned for a target, duration or note the service
	// cannot use.
	ErrBadInput = errors.New("bad input")
	// ErrClosed is returned when the service has stopped.
	ErrClosed = errors.New("contacts: closed")
)
