package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// newFlusher returns f's flush: fdatasync, which flushes the data (and
// the size, if it changed), not the file's times. The file stays open
// while it runs, though close may come meanwhile (then it fails with
// os.ErrClosed).
func newFlusher(f *os.File) func() error {
	return func() error {
		rc, err := f.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.Fdatasync(int(fd)) }); err != nil {
			return os.ErrClosed
		}
		return serr
	}
}
