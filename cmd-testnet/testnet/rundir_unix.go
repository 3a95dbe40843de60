//go:build unix

package testnet

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockRunDir takes the lock of dir, a run's new folder. The lock file is
// made and locked under another name and then renamed into place, so that a
// starting run scanning $TMPDIR never finds dir's lock file unlocked (it
// would take dir for a dead run's). The file is opened close-on-exec: the
// run's node processes do not hold the lock.
func lockRunDir(dir string) (unlock func(), err error) {
	tmp := filepath.Join(dir, runLockName+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, runLockName)); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// removeIfDead removes dir if it is a run's folder whose lock no process
// holds. The lock is kept while the folder is removed, so another run that
// scans meanwhile leaves it; a lock file taken from under another scanner
// (no longer at its path once locked) is left alone.
func removeIfDead(dir string) {
	path := filepath.Join(dir, runLockName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return // not a run's folder, or one being made or removed
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // a live run's
	}
	held, err := f.Stat()
	if err != nil {
		return
	}
	now, err := os.Stat(path)
	if err != nil || !os.SameFile(held, now) {
		return
	}
	clearRunDir(dir)
}
