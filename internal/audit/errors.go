package audit

import "errors"

var (
	// ErrBadRecord is returned when a record cannot be written: an action
	// that is not a dotted lower-case name, too many details, too long.
	ErrBadRecord = errors.New("audit: bad record")
	// ErrDamaged is returned when the log on disk does not read as a log.
	ErrDamaged = errors.New("audit: the audit log is damaged")
)
