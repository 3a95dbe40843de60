package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

func TestRoundTripAndLimits(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := Write(&buf, bytes.Repeat([]byte{1}, 300)); err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(buf.Bytes())
	if b, err := Read(r, 1000); err != nil || string(b) != "hello" {
		t.Fatalf("first = %q %v", b, err)
	}
	if b, err := Read(r, 1000); err != nil || len(b) != 300 {
		t.Fatalf("second = %d %v", len(b), err)
	}
	if _, err := Read(r, 1000); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
	for _, tc := range []struct {
		in   []byte
		want error
	}{
		{[]byte{0x80, 0x00}, ErrMalformed},
		{[]byte{0x00}, ErrMalformed},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x7f}, ErrTooLarge},
		{[]byte{0x05, 'a'}, io.ErrUnexpectedEOF},
		{[]byte{0x80}, io.ErrUnexpectedEOF},
	} {
		if _, err := Read(bytes.NewReader(tc.in), 1000); !errors.Is(err, tc.want) {
			t.Errorf("Read(%x) = %v, want %v", tc.in, err, tc.want)
		}
	}
	if err := Write(io.Discard, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty frame written: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte{0x05, 'h', 'e', 'l', 'l', 'o'})
	f.Add([]byte{0x80, 0x01})
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := Read(bytes.NewReader(in), 64)
		if err == nil && (len(b) == 0 || len(b) > 64) {
			t.Fatalf("frame of %d bytes accepted", len(b))
		}
	})
}

// A frame that claims 1 MiB and brings 1,000 bytes before its stream ends
// costs about what came, not what it claimed; a long frame that does come
// whole is read whole.
func TestReadGrowsAsBytesCome(t *testing.T) {
	claim := binary.AppendUvarint(nil, 1<<20)
	short := append(claim, bytes.Repeat([]byte{7}, 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Read(bytes.NewReader(short), 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a frame cut short: %v", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Fatalf("a frame claiming 1 MiB that brought 1,000 bytes allocated %d bytes", got)
	}
	body := bytes.Repeat([]byte("parley"), 200_000)
	var buf bytes.Buffer
	if err := Write(&buf, body); err != nil {
		t.Fatal(err)
	}
	got, err := Read(iotest.OneByteReader(&buf), len(body))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("a 1.2 MB frame read a byte at a time: %d bytes, %v", len(got), err)
	}
}
