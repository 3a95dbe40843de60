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
	"strings"
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
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after the link, the name only
	beforeCommit()
	// A link, not a rename: it never replaces a file at path.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		// A file system without hard links (FAT, some network ones):
		// created in place, exclusively, as before; a crash mid-write
		// may then leave a partial file.
		return createInPlace(path, data, perm)
	}
	return syncDir(filepath.Dir(path))
}

// Replace writes data to path with permissions perm so that a crash
// leaves the old file or the new one, whole: a temporary file in the same
// folder is written and synced, then renamed over path.
func Replace(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // a no-op after the rename
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// writeTemp writes data, synced, to a new temporary file beside path and
// returns its name. Temporary files of path that a process killed before
// it linked or renamed one left behind (a key's copy, perhaps) are removed
// first. A writer racing this one for the same path may lose its temporary
// file: CreateNew then creates the file in place, exclusively.
func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+"."
	if es, err := os.ReadDir(dir); err == nil {
		for _, e := range es {
			if n := e.Name(); strings.HasPrefix(n, prefix) && strings.HasSuffix(n, ".tmp") {
				os.Remove(filepath.Join(dir, n))
			}
		}
	}
	tmp, err := os.CreateTemp(dir, prefix+"*.tmp")
	if err != nil {
		return "", err
	}
	err = tmp.Chmod(perm)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// SyncDir makes the folder's entries durable (a rename into it, say).
func SyncDir(dir string) error { return syncDir(dir) }

// syncDir makes the folder's entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil // a folder that cannot be opened cannot be synced
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
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
