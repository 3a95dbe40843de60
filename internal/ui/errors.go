package ui

import "errors"

// ErrConfig is returned by New when its Config lacks a required field.
var ErrConfig = errors.New("ui: bad config")
