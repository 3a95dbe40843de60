package store

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newFlusher returns f's flush, an fdatasync, which flushes the data (and
// the size, if it changed), not the file's times, and a release for when
// the journal closes. The file stays open while a flush runs, though
// close may come meanwhile (then it fails with os.ErrClosed).
//
// Where the kernel takes it, the fdatasync is asked for through Linux AIO
// (IOCB_CMD_FDSYNC, since Linux 4.18) and its end is awaited on an
// eventfd in Go's network poller. A plain fdatasync keeps its thread's P
// (one of GOMAXPROCS) for as long as the disk takes, until the runtime's
// sysmon hands the P to another thread, and sysmon looks seldom when the
// process is mostly idle (its tick grows to 10 ms): on 2 cores a node's
// gossip ran on one core while its own post was being flushed. A flush
// that waits in the poller leaves both to it. Where AIO is missing or
// refuses (an old kernel, a filesystem without fsync for it, the
// system's AIO limit), the flush is a plain fdatasync.
func newFlusher(f *os.File) (flush func() error, release func()) {
	if useAIO {
		if a, err := newAIOFlusher(f); err == nil {
			return a.flush, a.release
		}
	}
	return func() error { return fdatasync(f) }, func() {}
}

// useAIO is false in tests of the plain fdatasync.
var useAIO = true

// fdatasync flushes f with a plain fdatasync.
func fdatasync(f *os.File) error {
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

// The kernel's AIO structures (include/uapi/linux/aio_abi.h), for a
// little-endian 64-bit layout (aio_key before aio_rw_flags).
type iocb struct {
	data     uint64
	key      uint32
	rwFlags  int32
	opcode   uint16
	reqprio  int16
	fildes   uint32
	buf      uint64
	nbytes   uint64
	offset   int64
	reserved uint64
	flags    uint32
	resfd    uint32
}

type ioEvent struct {
	data uint64
	obj  uint64
	res  int64
	res2 int64
}

const (
	iocbCmdFdsync = 3
	iocbFlagResfd = 1 << 0
)

// aioFlusher flushes one file through an AIO context of one request.
type aioFlusher struct {
	f *os.File

	mu      sync.Mutex // one flush at a time; release waits for it
	ctx     uintptr    // aio_context_t
	done    *os.File   // eventfd, non-blocking: Read waits in the poller
	doneFd  int        // done's descriptor (done.Fd would make it blocking)
	cb      iocb       // on the heap, where the kernel reads it
	ev      ioEvent
	plain   bool // AIO refused a request: plain fdatasync from then on
	gone    bool // released
	release func()
}

func newAIOFlusher(f *os.File) (*aioFlusher, error) {
	a := &aioFlusher{f: f}
	if _, _, errno := unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&a.ctx)), 0); errno != 0 {
		return nil, errno
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Syscall(unix.SYS_IO_DESTROY, a.ctx, 0, 0)
		return nil, err
	}
	a.doneFd = efd
	a.done = os.NewFile(uintptr(efd), "parley-journal-flush")
	var once sync.Once
	a.release = func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.gone = true
			unix.Syscall(unix.SYS_IO_DESTROY, a.ctx, 0, 0) // waits for a request in flight (none: mu)
			a.done.Close()
		})
	}
	return a, nil
}

// flush asks the kernel for the fdatasync and waits for its end in the
// poller.
func (a *aioFlusher) flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gone {
		return os.ErrClosed
	}
	if a.plain {
		return fdatasync(a.f)
	}
	rc, err := a.f.SyscallConn()
	if err != nil {
		return err
	}
	var submitErr syscall.Errno
	cerr := rc.Control(func(fd uintptr) {
		// The request holds its own reference to the file: a close
		// after this returns does not cut it short.
		a.cb = iocb{opcode: iocbCmdFdsync, fildes: uint32(fd), flags: iocbFlagResfd, resfd: uint32(a.doneFd)}
		cbs := [1]*iocb{&a.cb}
		n, _, errno := unix.Syscall(unix.SYS_IO_SUBMIT, a.ctx, 1, uintptr(unsafe.Pointer(&cbs[0])))
		switch {
		case errno != 0:
			submitErr = errno
		case n != 1:
			submitErr = unix.EAGAIN
		}
	})
	if cerr != nil {
		return os.ErrClosed
	}
	switch {
	case submitErr == unix.EAGAIN || submitErr == unix.EINTR:
		return fdatasync(a.f) // the system's AIO is busy: this once
	case submitErr != 0:
		a.plain = true // this kernel or filesystem does not fsync through AIO
		return fdatasync(a.f)
	}
	return a.wait()
}

// wait waits for the request's end and returns its result.
func (a *aioFlusher) wait() error {
	var count [8]byte
	for {
		// Read waits in the poller until the kernel counts the request
		// done (after it has put its event in the context's ring).
		if _, err := a.done.Read(count[:]); err == nil {
			break
		} else if !errors.Is(err, syscall.EINTR) {
			// Not expected: the eventfd is ours and open. Wait for the
			// event in the kernel instead.
			break
		}
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_GETEVENTS, a.ctx, 1, 1, uintptr(unsafe.Pointer(&a.ev)), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		if n == 1 {
			break
		}
	}
	if a.ev.res < 0 {
		return syscall.Errno(-a.ev.res)
	}
	return nil
}
