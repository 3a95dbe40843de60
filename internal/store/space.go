package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
)

// Badger maps its write-ahead logs, value logs and new tables into memory
// over sparse files, so on a full disk a write through the mapping (and on
// tmpfs even a read of a hole) faults with SIGBUS instead of returning an
// error. The store therefore never lets its own writes fill the disk:
// they are refused below a floor of free space (reads go on), which leaves
// room for what Badger already started (a memtable flush, a compaction).
// Another program may still take the rest, so a reserve file holds back
// space that is given to Badger where it must write whatever the disk
// holds: the replay at Open and the memtable flush at Close.

// ReserveName is the reserve file in the database folder.
const ReserveName = "parley.reserve"

// DefaultMinFree is the free-space floor when Config.MinFree is zero: more
// than Badger needs to flush a memtable (8 MiB) and finish a compaction of
// a laptop-sized database.
const DefaultMinFree = 64 << 20

// Reserve sizes: a quarter of the floor, within these bounds; the least is
// what Badger needs to flush a full memtable (8 MiB) at Close.
const (
	minReserve = 8 << 20
	maxReserve = 16 << 20
)

// reserveRetry is how long a failed attempt to make the reserve is not
// tried again.
const reserveRetry = 10 * time.Second

// ReserveSize is the size of the reserve file for a floor of minFree bytes.
func ReserveSize(minFree int64) int64 {
	return min(max(minFree/4, minReserve), maxReserve)
}

// freeReuse is how long a reading of the free space serves the writes
// that follow it while the disk is far above the floor: a statfs per
// write costs more than the write of a small batch.
const freeReuse = 100 * time.Millisecond

// space watches the free space of the database's disk.
type space struct {
	dir     string
	minFree int64 // ≤ 0: no floor, no reserve
	reserve int64
	free    func(dir string) (int64, error)
	log     *slog.Logger
	reuse   time.Duration // how long a reading serves (freeReuse; 0: none)

	mu         sync.Mutex // protects the fields below
	full       bool       // writes are refused
	have       bool       // the reserve file is in place
	nextTry    time.Time  // no attempt to make the reserve before this
	statWarned bool       // a failed statfs was logged
	readAt     time.Time  // when free was read (zero: never, or not to reuse)
	read       int64      // the free space then
	spent      int64      // bytes checked since, taken off read
}

func newSpace(dir string, minFree int64, free func(string) (int64, error), log *slog.Logger) *space {
	reuse := time.Duration(0) // a disk faked by a test changes at once
	if free == nil {
		free, reuse = freeBytes, freeReuse
	}
	s := &space{dir: dir, minFree: minFree, free: free, log: log, reuse: reuse}
	if minFree > 0 {
		s.reserve = ReserveSize(minFree)
	}
	return s
}

func (s *space) path() string { return filepath.Join(s.dir, ReserveName) }

// open runs before Badger opens: with less free than the reserve, the
// reserve is given to Badger for its replay; below the floor, writes are
// refused until space returns (and the reserve is made again).
func (s *space) open() {
	if s.minFree <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, err := os.Stat(s.path()); err == nil {
		s.have = st.Size() == s.reserve
		if !s.have {
			s.releaseLocked() // the floor changed: made again at its new size
		}
	}
	free, ok := s.freeLocked()
	if ok && free < s.reserve {
		s.releaseLocked()
	}
	if ok && free < s.minFree {
		s.full = true
		s.log.Warn("disk nearly full: the node serves reads and refuses writes until space is freed",
			"dir", s.dir, "free", humanize.IBytes(uint64(free)), "floor", humanize.IBytes(uint64(s.minFree)))
	}
}

// check is called before writing about n bytes. It returns an error wrapping
// ErrDiskFull unless the reserve is in place (it is made here if missing)
// and the free space stays above the floor after the write.
func (s *space) check(n int) error {
	if s.minFree <= 0 {
		return nil
	}
	need := s.minFree + 2*int64(n) // the write-ahead log and the value log
	s.mu.Lock()
	defer s.mu.Unlock()
	// Far above the floor (another floor's worth to spare) a recent
	// reading serves, less what was written since.
	if s.have && !s.full && !s.readAt.IsZero() && time.Since(s.readAt) < s.reuse &&
		s.read-s.spent >= need+s.minFree {
		s.spent += 2 * int64(n)
		return nil
	}
	s.readAt = time.Time{}
	free, ok := s.freeLocked()
	if !ok {
		return nil // cannot tell: do not stop the node over it
	}
	if !s.have {
		if free < need+s.reserve || !s.makeReserveLocked() {
			return s.fullLocked(free)
		}
		free -= s.reserve
	}
	if free < need {
		return s.fullLocked(free)
	}
	if s.full {
		s.full = false
		s.log.Info("disk space is back: writes are taken again", "dir", s.dir)
	}
	if s.reuse > 0 {
		s.readAt, s.read, s.spent = time.Now(), free, 2*int64(n)
	}
	return nil
}

// fullLocked records that writes are refused and returns the error. The
// reserve stays: it is for Badger's flush at Close, should another program
// take what is left above the floor.
func (s *space) fullLocked(free int64) error {
	if !s.full {
		s.full = true
		s.log.Warn("disk nearly full: refusing writes; reads go on", "dir", s.dir,
			"free", humanize.IBytes(uint64(max(free, 0))), "floor", humanize.IBytes(uint64(s.minFree)),
			"reserve", humanize.IBytes(uint64(s.reserve)))
	}
	return s.errFull(free)
}

// close runs before Badger closes and flushes its memtable: unless the disk
// has room for the floor and the reserve, the reserve is given to Badger.
func (s *space) close() {
	if s.minFree <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if free, ok := s.freeLocked(); !ok || free < s.minFree+s.reserve {
		s.releaseLocked()
	}
}

// Full reports whether writes are being refused.
func (s *space) isFull() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.full
}

func (s *space) errFull(free int64) error {
	return fmt.Errorf("%w: %s free on the disk of %s, and Parley keeps %s free (plus a %s reserve) so its database stays sound; free some space and writes resume (reads still work)",
		ErrDiskFull, humanize.IBytes(uint64(max(free, 0))), s.dir, humanize.IBytes(uint64(s.minFree)), humanize.IBytes(uint64(s.reserve)))
}

func (s *space) freeLocked() (int64, bool) {
	free, err := s.free(s.dir)
	if err != nil {
		if !s.statWarned {
			s.statWarned = true
			s.log.Warn("cannot read the free space of the database's disk; writes are not checked against the floor", "dir", s.dir, "err", err)
		}
		return 0, false
	}
	return free, true
}

func (s *space) releaseLocked() {
	if err := os.Remove(s.path()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("cannot remove the space reserve", "path", s.path(), "err", err)
	}
	s.have = false
}

// makeReserveLocked makes the reserve file; a partial one is removed.
func (s *space) makeReserveLocked() bool {
	now := time.Now()
	if now.Before(s.nextTry) {
		return false
	}
	if err := allocate(s.path(), s.reserve); err != nil {
		_ = os.Remove(s.path()) // a partial reserve holds space for nothing
		s.nextTry = now.Add(reserveRetry)
		s.log.Debug("space reserve not made", "path", s.path(), "err", err)
		return false
	}
	s.have = true
	return true
}

// allocate makes path a file of size bytes whose blocks are allocated.
func allocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := preallocate(f, size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeZeros allocates by writing, where the file system cannot reserve
// blocks otherwise.
func writeZeros(f *os.File, size int64) error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
	}
	return nil
}

// freeBytes is the space available to this user on the disk of dir.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// FreeBytes is the space available to this user on the disk of dir.
func FreeBytes(dir string) (int64, error) { return freeBytes(dir) }
