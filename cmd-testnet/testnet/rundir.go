package testnet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// runDirPrefix begins the name of a run's temporary folder of node homes in
// $TMPDIR; short, so that unix socket paths in node homes stay short.
const runDirPrefix = "ptn"

// runLockName is the lock file in a run's temporary folder: the run holds
// an exclusive flock on it for its whole life, and the kernel releases it
// when the run's process ends, however it ends (SIGKILL too). A folder
// named ptn… without it is not a run's and is never touched.
const runLockName = ".parley-testnet.lock"

// makeRunDir makes a run's temporary folder in $TMPDIR and takes its lock,
// after removing the folders of earlier runs whose process died without
// removing its own (SIGKILL: its nodes die with it by Pdeathsig, but the
// folder stays). done removes the folder and ends the lock.
func makeRunDir() (dir string, done func(), err error) {
	removeDeadRunDirs(os.TempDir())
	dir, err = os.MkdirTemp("", runDirPrefix)
	if err != nil {
		return "", nil, err
	}
	unlock, err := lockRunDir(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return dir, func() {
		os.RemoveAll(dir)
		unlock()
	}, nil
}

// removeDeadRunDirs removes the run folders in tmp whose lock no process
// holds. A folder whose lock file is not there yet (a run that is making
// it) or is held (a live run) is left.
func removeDeadRunDirs(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runDirPrefix) {
			continue
		}
		removeIfDead(filepath.Join(tmp, e.Name()))
	}
}

// clearRunDir removes what dir holds but its lock file, then the lock file
// and dir itself, so that a removal cut short (the remover killed in turn)
// still leaves a folder the next run finds dead.
func clearRunDir(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() != runLockName {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	os.Remove(filepath.Join(dir, runLockName))
	os.Remove(dir)
}
