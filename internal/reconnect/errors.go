package reconnect

import "errors"

// ErrBadRecord is returned when a stored address record cannot be decoded.
var ErrBadRecord = errors.New("reconnect: bad address record")
