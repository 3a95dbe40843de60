//go:build !linux

package store

import "os"

// preallocate reserves size bytes of blocks for f by writing zeros.
func preallocate(f *os.File, size int64) error { return writeZeros(f, size) }
