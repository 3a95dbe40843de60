package store

import "errors"

var (
	// ErrNotFound is returned when a key has no value.
	ErrNotFound = errors.New("store: not found")
	// ErrClosed is returned when the database is used after Close.
	ErrClosed = errors.New("store: closed")
)
