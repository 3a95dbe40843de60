package node

import "github.com/parley-mesh/parley/internal/dialerr"

// dialReason condenses a libp2p dial error's text into one line
// (dialerr.Reason).
func dialReason(s string) string { return dialerr.Reason(s) }

// dialError is a failed dial's error with dialReason's text; it wraps the
// error libp2p returned.
type dialError struct{ err error }

func (e dialError) Error() string { return dialReason(e.err.Error()) }
func (e dialError) Unwrap() error { return e.err }
