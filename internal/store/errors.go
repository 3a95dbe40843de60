package store

import "errors"

var (
	// ErrNotFound is returned when a key has no value.
	ErrNotFound = errors.New("store: not found")
	// ErrClosed is returned when the database is used after Close.
	ErrClosed = errors.New("store: closed")
	// ErrCorrupt is returned when the database on disk is damaged: a file
	// Badger needs is missing, cut short or fails its checksum, or Badger
	// panicked reading it. Callers tell it apart from other errors with
	// errors.Is; the message names what is damaged. Opening refuses a
	// damaged database rather than let Badger drop files it cannot place.
	ErrCorrupt = errors.New("store: the database is damaged")
	// ErrDiskFull is returned by writes while the free space on the
	// database's disk is below the floor (Config.MinFree). Reads go on;
	// writes are taken again once enough space is free.
	ErrDiskFull = errors.New("store: disk nearly full, writes refused")
)
