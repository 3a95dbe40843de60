package node

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdShared takes HOME/node.lock shared from this process, as
// HomeLockHolder (a `parley status`, a `parley down`) does for an instant,
// and returns a function that lets it go.
func holdShared(t *testing.T, home string) func() {
	t.Helper()
	f, err := os.Open(filepath.Join(home, LockFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		f.Close()
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// A node that crashed leaves its pid in node.lock. A command that looks at
// the home in the instant a node starts there holds the lock shared: the
// start must wait for it, as it does when the file names no pid, and not
// be refused "locked (pid …)" in the name of a process that does not run.
func TestLockHomeRetriesWhileTheLockFileNamesADeadPid(t *testing.T) {
	t.Parallel()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid
	if err := syscall.Kill(dead, 0); err == nil || errors.Is(err, syscall.EPERM) {
		t.Skipf("pid %d was taken again", dead)
	}
	home := t.TempDir()
	path := filepath.Join(home, LockFileName)
	if err := os.WriteFile(path, []byte(strconv.Itoa(dead)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Held throughout: the start tries for its whole deadline, then is
	// refused (before, it was refused at once).
	release := holdShared(t, home)
	start := time.Now()
	l, err := lockHome(home)
	took := time.Since(start)
	if err == nil {
		l.unlock()
		t.Fatal("lockHome took a home whose lock another process holds")
	}
	if !errors.Is(err, ErrHomeLocked) {
		t.Fatalf("lockHome: %v, want ErrHomeLocked", err)
	}
	if took < pidlessRetry {
		t.Fatalf("lockHome was refused after %s (%v), though node.lock names pid %d, which does not run: it should retry for %s",
			took, err, dead, pidlessRetry)
	}
	release()

	// Let go while the start retries: the start takes the home.
	release = holdShared(t, home)
	got := make(chan error, 1)
	var held *homeLock
	go func() {
		var err error
		held, err = lockHome(home)
		got <- err
	}()
	release()
	if err := <-got; err != nil {
		t.Fatalf("lockHome, once the shared lock was let go: %v", err)
	}
	defer held.unlock()
	raw, _ := os.ReadFile(path)
	if strings.TrimSpace(string(raw)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("node.lock holds %q, want this process's pid %d", raw, os.Getpid())
	}
}

// A lock held while node.lock names a process that runs is a node's: the
// start is refused at once, naming it.
func TestLockHomeRefusesALiveHolderAtOnce(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, LockFileName)
	live := os.Getpid()
	if err := os.WriteFile(path, []byte(strconv.Itoa(live)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	holdShared(t, home)
	start := time.Now()
	l, err := lockHome(home)
	took := time.Since(start)
	if err == nil {
		l.unlock()
		t.Fatal("lockHome took a home whose lock another process holds")
	}
	if !errors.Is(err, ErrHomeLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(live)) {
		t.Fatalf("lockHome: %v, want ErrHomeLocked naming pid %d", err, live)
	}
	if took >= pidlessRetry {
		t.Fatalf("lockHome took %s to refuse a home held under a pid that runs: it should refuse at once", took)
	}
}
