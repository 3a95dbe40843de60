// Package atomicfile creates files that a crash leaves either absent or
// whole: keys, which a half-written file would make unreadable and which
// must never be overwritten.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// beforeCommit runs, in tests, once the data is durable in the temporary
// file and before it takes its name.
var beforeCommit = func() {}

// CreateNew writes data to a new file at path with permissions perm: a
// temporary file in the same folder is written and synced, then linked to
// path, and the folder synced. A crash at any point leaves either no file
// at path or the whole one. If path exists, nothing is written and the
// error wraps fs.ErrExist (two processes racing: one wins).
func CreateNew(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the link, the name only
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	beforeCommit()
	// A link, not a rename: it never replaces a file at path.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		// A file system without hard links (FAT, some network ones):
		// created in place, exclusively, as before; a crash mid-write
		// may then leave a partial file.
		return createInPlace(path, data, perm)
	}
	if d, err := os.Open(dir); err == nil {
		serr := d.Sync()
		d.Close()
		if serr != nil {
			return fmt.Errorf("sync %s: %w", dir, serr)
		}
	}
	return nil
}

// createInPlace writes data to a new file at path, failing with
// fs.ErrExist if there is one.
func createInPlace(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
