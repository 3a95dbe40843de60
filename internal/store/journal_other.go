//go:build !linux

package store

import "os"

// newFlusher returns f's flush.
func newFlusher(f *os.File) func() error { return f.Sync }

// noReadahead does nothing here.
func noReadahead(*os.File) {}
