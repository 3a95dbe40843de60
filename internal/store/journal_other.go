//go:build !linux

package store

import "os"

// newFlusher returns f's flush, and a release for when the journal closes.
func newFlusher(f *os.File) (flush func() error, release func()) { return f.Sync, func() {} }
