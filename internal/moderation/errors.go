package moderation

import "errors"

var (
	// ErrMuted is returned when a muted agent posts.
	ErrMuted = errors.New("moderation: muted")
	// ErrKilled is returned when a killed agent posts.
	ErrKilled = errors.New("moderation: killed")
	// ErrRateLimited is returned when an agent posts over its limit.
	ErrRateLimited = errors.New("moderation: over the post limit")
	// ErrBadInput is returned for a malformed agent address or duration.
	ErrBadInput = errors.New("moderation: bad input")
	// ErrNotFound is returned when an unmute or revive names an agent that
	// is not muted or not killed.
	ErrNotFound = errors.New("moderation: nothing to undo")
	// ErrBadConfig is returned by New for a missing required field.
	ErrBadConfig = errors.New("moderation: bad config")
)
