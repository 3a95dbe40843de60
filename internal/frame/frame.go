// Package frame reads and writes the frames every Parley stream protocol
// uses (/parley/sync/1, /parley/invite/1, /parley/contact/1,
// /parley/presence/1, /parley/cards/1): a minimally encoded uvarint length,
// then that many bytes.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

var (
	// ErrTooLarge is returned when a frame is longer than the reader allows.
	ErrTooLarge = errors.New("frame: too large")
	// ErrMalformed is returned when a frame length is empty or not minimal.
	ErrMalformed = errors.New("frame: malformed")
)

// Read reads one frame of 1 to max bytes and returns its body. It reads
// nothing beyond the frame, allocates nothing before the length is
// checked, and no more than twice the bytes that came (at least 16 KiB). It returns io.EOF if r ends before the frame begins, and
// io.ErrUnexpectedEOF if it ends inside it.
func Read(r io.Reader, max int) ([]byte, error) {
	var n uint64
	var one [1]byte
	for i := 0; ; i++ {
		if i == binary.MaxVarintLen32 {
			return nil, fmt.Errorf("%w: frame length of more than %d bytes", ErrTooLarge, i)
		}
		if _, err := io.ReadFull(r, one[:]); err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		c := one[0]
		if i > 0 && c == 0 {
			return nil, fmt.Errorf("%w: frame length not minimally encoded", ErrMalformed)
		}
		n |= uint64(c&0x7f) << (7 * i)
		if n > uint64(max) {
			return nil, fmt.Errorf("%w: frame of more than %d bytes", ErrTooLarge, max)
		}
		if c < 0x80 {
			break
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: empty frame", ErrMalformed)
	}
	// The body's buffer grows as its bytes come, so a peer that claims a
	// large frame and sends little of it holds little memory.
	b := make([]byte, 0, min(n, growFrom))
	for uint64(len(b)) < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(n, 2*uint64(cap(b))))-len(b))
		}
		k, err := io.ReadFull(r, b[len(b):min(uint64(cap(b)), n)])
		b = b[:len(b)+k]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return b, nil
}

// growFrom is the body's first buffer: a frame longer than it is read into
// a buffer that doubles as its bytes come.
const growFrom = 16 << 10

// Write writes b as one frame, length and body in a single Write.
func Write(w io.Writer, b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty frame", ErrMalformed)
	}
	buf := make([]byte, 0, binary.MaxVarintLen64+len(b))
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	_, err := w.Write(append(buf, b...))
	return err
}
