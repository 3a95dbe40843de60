package contacts

import (
	"errors"
	"fmt"
)

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

// plainError is an error the user reads as one sentence: the operations
// do not wrap it in their context ("contacts: revoke REF: …"), since its
// text says what it is about. It still is err for errors.Is (the local
// API gives it err's status and code).
type plainError struct {
	msg string
	err error
}

func (e *plainError) Error() string { return e.msg }
func (e *plainError) Unwrap() error { return e.err }

// plain makes err (a sentinel, or an error wrapping one) the sentence of
// format and a.
func plain(err error, format string, a ...any) error {
	return &plainError{msg: fmt.Sprintf(format, a...), err: err}
}

// wrapOp wraps a failed operation's error in its context (op and ref),
// unless it is a plainError already.
func wrapOp(err *error, op, ref string) {
	var pe *plainError
	if *err != nil && !errors.As(*err, &pe) {
		*err = fmt.Errorf("contacts: %s %s: %w", op, ref, *err)
	}
}
