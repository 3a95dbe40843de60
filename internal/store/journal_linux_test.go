package store

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// The journal's flush goes through AIO where the kernel takes it, and
// every flush of many at once comes back, in order, without error.
func TestFlushThroughAIO(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "j"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := newAIOFlusher(f)
	if err != nil {
		t.Skipf("this kernel has no AIO for us (%v): flushes are plain fdatasyncs", err)
	}
	defer a.release()
	block := make([]byte, 4096)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.WriteAt(block, int64(i)*4096); err != nil {
				errs <- err
				return
			}
			errs <- a.flush()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if a.plain {
		t.Fatal("the flusher fell back to plain fdatasync on a regular file")
	}
	a.release()
	if err := a.flush(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("flush after release: %v, want os.ErrClosed", err)
	}
}

// A file AIO cannot flush (a pipe has no fsync) turns the flusher to plain
// fdatasync, whose error comes back.
func TestFlushFallsBackToFdatasync(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	a, err := newAIOFlusher(w)
	if err != nil {
		t.Skipf("this kernel has no AIO for us (%v)", err)
	}
	defer a.release()
	if err := a.flush(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("flush of a pipe: %v, want EINVAL", err)
	}
	if !a.plain {
		t.Fatal("the flusher kept AIO after the kernel refused the request")
	}
	w.Close()
	if err := a.flush(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("flush of a closed file: %v, want os.ErrClosed", err)
	}
}

// BenchmarkFlush times a 1 KiB write and its flush, plain fdatasync
// against AIO.
func BenchmarkFlush(b *testing.B) {
	for _, mode := range []string{"fdatasync", "aio"} {
		b.Run(mode, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "j"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(4 << 20); err != nil {
				b.Fatal(err)
			}
			flush := func() error { return fdatasync(f) }
			if mode == "aio" {
				a, err := newAIOFlusher(f)
				if err != nil {
					b.Skip(err)
				}
				defer a.release()
				flush = a.flush
			}
			block := make([]byte, 1024)
			b.ResetTimer()
			for i := range b.N {
				if _, err := f.WriteAt(block, int64(i%4096)*1024); err != nil {
					b.Fatal(err)
				}
				if err := flush(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
