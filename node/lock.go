package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// homeLock is an flock on HOME/node.lock held for the node's life. The
// kernel drops it when the process dies, so a crash never leaves the home
// locked.
type homeLock struct{ f *os.File }

func lockHome(home string) (*homeLock, error) {
	path := filepath.Join(home, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node: open lock %s: %w", path, err)
	}
	if err := flockRetry(f, path); err != nil {
		raw, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(raw))
			if _, perr := strconv.Atoi(pid); perr != nil {
				pid = "unknown"
			}
			return nil, fmt.Errorf("%w: %s (pid %s); stop it with `parley --home %s down` or use another --home",
				ErrHomeLocked, home, pid, home)
		}
		return nil, fmt.Errorf("node: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &homeLock{f: f}, nil
}

// pidlessRetry bounds how long lockHome keeps trying a lock that is held
// while the lock file names no pid, or the pid of a process that does not
// run: HomeLockHolder (a `parley down` or status polling) holds it shared
// for an instant, a node writes its pid just after taking it, and a node
// that crashed left its pid behind. A holder that writes none (not a node)
// is reported once this has passed.
const pidlessRetry = time.Second

// flockRetry takes the lock exclusively without blocking, trying again for
// up to pidlessRetry while it is held and the file names no pid, or one
// that does not run (a crashed node's, the lock held by a command looking
// at the home for an instant).
func flockRetry(f *os.File, path string) error {
	deadline := time.Now().Add(pidlessRetry)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		raw, _ := os.ReadFile(path)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(raw)))
		if (perr == nil && pid > 0 && ProcessRuns(pid)) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond) // polling a lock: nothing to wait on
	}
}

// ProcessRuns reports whether a process with the pid exists (one of another
// user's counts).
func ProcessRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (l *homeLock) unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// HomeLockHolder reports whether a node holds the home's lock, and the pid
// it wrote there (0 when none is written). It takes the lock shared for a
// moment to find out, so it never blocks a node; a node starting in that
// moment retries (flockRetry).
func HomeLockHolder(home string) (held bool, pid int, err error) {
	path := filepath.Join(home, LockFileName)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("node: open lock %s: %w", path, err)
	}
	defer f.Close()
	// The pid is a hint (a lock file without one still locks), read after
	// the lock is tried: a node writes it once it holds the lock.
	readPid := func() int {
		raw, _ := os.ReadFile(path)
		n, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
		return n
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	pid = readPid()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, pid, nil
	}
	if err != nil {
		return false, pid, fmt.Errorf("node: lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		return false, pid, fmt.Errorf("node: unlock %s: %w", path, err)
	}
	return false, pid, nil
}
