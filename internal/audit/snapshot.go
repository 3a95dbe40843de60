package audit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Snapshot calls fn with the log file and then its head file (by name, size
// and contents), as one Append left them: it holds the log's lock, shared,
// so no append runs meanwhile (in this process or another). A home without
// a log calls fn for neither.
func Snapshot(dir string, fn func(name string, size int64, r io.Reader) error) error {
	f, err := openLog(dir)
	if f == nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		return fmt.Errorf("audit: lock %s: %w", f.Name(), err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks too
	if err := snapshotFile(f, fn); err != nil {
		return err
	}
	h, err := os.Open(filepath.Join(dir, HeadName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer h.Close()
	return snapshotFile(h, fn)
}

func snapshotFile(f *os.File, fn func(name string, size int64, r io.Reader) error) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return fn(filepath.Base(f.Name()), st.Size(), io.NewSectionReader(f, 0, st.Size()))
}
