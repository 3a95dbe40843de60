package rooms

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

func sampleHello(t testing.TB) *Hello {
	_, a := testKey(t, 1)
	_, b := testKey(t, 2)
	return &Hello{
		Room:  testRoom,
		Heads: []ID{fakeID(1), fakeID(2)},
		VV:    map[peer.ID]uint64{a: 7, b: 1},
		Want:  []ID{fakeID(3)},
		Limit: 500,
	}
}

// rangedHello asks for the authors from the lesser of two keys up to the
// greater, and holds one event of the first.
func rangedHello(t testing.TB) *Hello {
	_, a := testKey(t, 1)
	_, b := testKey(t, 2)
	lo, hi := min(a, b), max(a, b)
	return &Hello{Room: testRoom, VV: map[peer.ID]uint64{lo: 1}, From: lo, To: hi}
}

// frame builds a raw frame: uvarint length then body.
func rawFrame(body []byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(body))), body...)
}

func TestHelloRoundTrip(t *testing.T) {
	for _, h := range []*Hello{sampleHello(t), {Room: testRoom}, rangedHello(t)} {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, h); err != nil {
			t.Fatal(err)
		}
		got, err := ReadHello(iotest.OneByteReader(&buf), 0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("round trip\n got %+v\nwant %+v", got, h)
		}
		if buf.Len() != 0 {
			t.Fatal("ReadHello left bytes behind")
		}
	}
	// By value too, and deterministic.
	var b1, b2 bytes.Buffer
	if err := WriteFrame(&b1, *sampleHello(t)); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b2.Reset()
		WriteFrame(&b2, sampleHello(t))
		if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
			t.Fatal("hello encoding not deterministic")
		}
	}
}

func TestBatchStream(t *testing.T) {
	priv, me := testKey(t, 1)
	w1, _ := mustSeal(t, priv, createEvent(me))
	w2, _ := mustSeal(t, priv, messageEvent(me, "x", fakeID(1)))
	var buf bytes.Buffer
	for _, b := range []any{Batch{Events: [][]byte{w1}}, &Batch{Events: [][]byte{w2, w1}}, Batch{End: true, More: true}} {
		if err := WriteFrame(&buf, b); err != nil {
			t.Fatal(err)
		}
	}
	r := iotest.HalfReader(&buf)
	var events [][]byte
	for {
		b, err := ReadBatch(r)
		if err != nil {
			t.Fatal(err)
		}
		if b.End {
			if !b.More {
				t.Fatal("lost More")
			}
			break
		}
		events = append(events, b.Events...)
	}
	if len(events) != 3 || !bytes.Equal(events[0], w1) || !bytes.Equal(events[1], w2) {
		t.Fatal("events changed in transit")
	}
	if _, err := ReadBatch(r); !errors.Is(err, io.EOF) {
		t.Fatalf("read past end: %v", err)
	}
}

func TestBatchFits(t *testing.T) {
	ev := make([]byte, MaxWire)
	var b Batch
	for b.Fits(len(ev)) {
		b.Events = append(b.Events, ev)
	}
	if len(b.Events) < 10 {
		t.Fatalf("only %d max-size events fit", len(b.Events))
	}
	var buf bytes.Buffer
	if err := WriteFrame(&buf, &b); err != nil {
		t.Fatalf("full batch: %v", err)
	}
	b.Events = append(b.Events, ev)
	if err := WriteFrame(io.Discard, &b); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("overfull batch: %v", err)
	}
	small := Batch{}
	for small.Fits(1) {
		small.Events = append(small.Events, []byte{1})
	}
	if len(small.Events) != MaxBatchEvents {
		t.Fatalf("%d tiny events fit, want %d", len(small.Events), MaxBatchEvents)
	}
}

func TestWriteFrameRefuses(t *testing.T) {
	many := make([]ID, MaxHeads+1)
	ranged := rangedHello(t)
	tests := []struct {
		name string
		v    any
		want error
	}{
		{"unsupported", 42, ErrMalformed},
		{"nil hello", (*Hello)(nil), ErrMalformed},
		{"bad room", &Hello{Room: "x"}, identity.ErrBadName},
		{"65 heads", &Hello{Room: testRoom, Heads: many}, ErrTooLarge},
		{"257 want", &Hello{Room: testRoom, Want: make([]ID, MaxWant+1)}, ErrTooLarge},
		{"seq 0", &Hello{Room: testRoom, VV: map[peer.ID]uint64{sampleKeyID(t): 0}}, ErrMalformed},
		{"bad author", &Hello{Room: testRoom, VV: map[peer.ID]uint64{"junk": 1}}, ErrMalformed},
		{"bound not a peer", &Hello{Room: testRoom, From: "junk"}, ErrMalformed},
		{"empty range", &Hello{Room: testRoom, From: ranged.To, To: ranged.From}, ErrMalformed},
		{"same bounds", &Hello{Room: testRoom, From: ranged.From, To: ranged.From}, ErrMalformed},
		{"author past the range", &Hello{Room: testRoom, VV: map[peer.ID]uint64{ranged.To: 1}, From: ranged.From, To: ranged.To}, ErrMalformed},
		{"author before the range", &Hello{Room: testRoom, VV: map[peer.ID]uint64{ranged.From: 1}, From: ranged.To}, ErrMalformed},
		{"empty batch", Batch{}, ErrMalformed},
		{"end with events", Batch{End: true, Events: [][]byte{{1}}}, ErrMalformed},
		{"more without end", Batch{More: true, Events: [][]byte{{1}}}, ErrMalformed},
		{"empty event", Batch{Events: [][]byte{{}}}, ErrMalformed},
		{"big event", Batch{Events: [][]byte{make([]byte, MaxWire+1)}}, ErrTooLarge},
		{"too many events", Batch{Events: make([][]byte, MaxBatchEvents+1)}, ErrTooLarge},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, tc.v); !errors.Is(err, tc.want) {
			t.Errorf("%s: WriteFrame = %v, want %v", tc.name, err, tc.want)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %d bytes", tc.name, buf.Len())
		}
	}
	if err := WriteFrame(failWriter{}, &Batch{End: true}); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write error lost: %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func sampleKeyID(t *testing.T) peer.ID {
	_, id := testKey(t, 9)
	return id
}

func TestReadFrameRefuses(t *testing.T) {
	good := func(h *Hello) []byte {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, h); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	hw := sampleHello(t).wire()
	enc := func(v any) []byte {
		b, err := encMode.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return rawFrame(b)
	}
	dupVV := hw
	dupVV.VV = append(dupVV.VV, dupVV.VV[0])
	bigVV := helloWire{Room: string(testRoom)}
	someone := []byte(sampleKeyID(t))
	for i := range MaxVV + 1 {
		bigVV.VV = append(bigVV.VV, vvEntry{Author: someone, Seq: uint64(i + 1)})
	}
	tests := []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"empty input", nil, 0, io.EOF},
		{"truncated length", []byte{0x80}, 0, io.ErrUnexpectedEOF},
		{"truncated body", good(sampleHello(t))[:20], 0, io.ErrUnexpectedEOF},
		{"zero length", []byte{0x00}, 0, ErrMalformed},
		{"non-minimal length", []byte{0x81, 0x00, 0xa0}, 0, ErrMalformed},
		{"endless length", bytes.Repeat([]byte{0x80}, 100), 0, ErrTooLarge},
		{"huge length", binary.AppendUvarint(nil, 1<<62), 0, ErrTooLarge},
		{"length over MaxFrame", binary.AppendUvarint(nil, MaxFrame+1), 0, ErrTooLarge},
		{"length over max", good(sampleHello(t)), 20, ErrTooLarge},
		{"not cbor", rawFrame([]byte{0xff, 0xff}), 0, ErrMalformed},
		{"trailing bytes", rawFrame(append(enc(hw)[2:], 0x00)), 0, ErrMalformed},
		{"array", rawFrame([]byte{0x80}), 0, ErrMalformed},
		{"unknown key", rawFrame([]byte{0xa1, 0x18, 0x63, 0x00}), 0, ErrMalformed},
		{"no room", rawFrame([]byte{0xa0}), 0, identity.ErrBadName},
		{"short head", enc(helloWire{Room: string(testRoom), Heads: [][]byte{{1, 2}}}), 0, ErrMalformed},
		{"65 heads", enc(helloWire{Room: string(testRoom), Heads: idBytes(make([]ID, MaxHeads+1))}), 0, ErrTooLarge},
		{"257 want", enc(helloWire{Room: string(testRoom), Want: idBytes(make([]ID, MaxWant+1))}), 0, ErrTooLarge},
		{"duplicate vv", enc(dupVV), 0, ErrMalformed},
		{"4097 vv", enc(bigVV), 0, ErrTooLarge},
		{"vv seq 0", enc(helloWire{Room: string(testRoom), VV: []vvEntry{{Author: []byte(sampleKeyID(t))}}}), 0, ErrMalformed},
		{"vv bad author", enc(helloWire{Room: string(testRoom), VV: []vvEntry{{Author: []byte{1}, Seq: 1}}}), 0, ErrMalformed},
		{"deep nesting", rawFrame([]byte{0xa1, 0x02, 0x81, 0x81, 0x81, 0x81, 0x81, 0x40}), 0, ErrTooLarge},
		{"tag", rawFrame([]byte{0xc1, 0xa0}), 0, ErrMalformed},
	}
	for _, tc := range tests {
		_, err := ReadHello(bytes.NewReader(tc.in), tc.max)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: ReadHello = %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "rooms: read hello: ") {
			t.Errorf("%s: error not wrapped: %v", tc.name, err)
		}
	}

	for name, in := range map[string][]byte{
		"empty batch":      enc(Batch{}),
		"more without end": rawFrame([]byte{0xa2, 0x01, 0x81, 0x41, 0x01, 0x03, 0xf5}),
		"end with events":  rawFrame([]byte{0xa2, 0x01, 0x81, 0x41, 0x01, 0x02, 0xf5}),
		"event not bytes":  rawFrame([]byte{0xa1, 0x01, 0x81, 0x61, 0x61}),
		"end not bool":     rawFrame([]byte{0xa1, 0x02, 0x01}),
		"empty event":      rawFrame([]byte{0xa1, 0x01, 0x81, 0x40}),
		"dup key":          rawFrame([]byte{0xa2, 0x02, 0xf5, 0x02, 0xf5}),
	} {
		if _, err := ReadBatch(bytes.NewReader(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ReadBatch = %v, want ErrMalformed", name, err)
		}
	}
	big := rawFrame(append([]byte{0xa1, 0x01, 0x81, 0x5a, 0, 1, 0x40, 0x01}, make([]byte, MaxWire+1)...))
	if _, err := ReadBatch(bytes.NewReader(big)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized event: %v", err)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestReadFrameLengthFirst checks that an oversized length is refused
// after reading only the length, never the body.
func TestReadFrameLengthFirst(t *testing.T) {
	in := append(binary.AppendUvarint(nil, MaxFrame+1), make([]byte, MaxFrame+1)...)
	cr := &countingReader{r: bytes.NewReader(in)}
	if _, err := ReadBatch(cr); !errors.Is(err, ErrTooLarge) {
		t.Fatal(err)
	}
	if cr.n > 3 {
		t.Fatalf("read %d bytes before refusing", cr.n)
	}
}

// helloVV lists every author while they fit, and else the authors in the
// order of their IDs, limit at a time, each round's from the last one's to.
func TestHelloVVPages(t *testing.T) {
	vv := map[peer.ID]uint64{}
	for i := range 10 {
		_, a := testKey(t, byte(i+1))
		vv[a] = uint64(i + 1)
	}
	all, lo, to := helloVV(vv, "", 10)
	if !maps.Equal(all, vv) || lo != "" || to != "" {
		t.Fatalf("a vv that fits: %d of %d authors, from %q to %q", len(all), len(vv), lo, to)
	}
	seen := map[peer.ID]uint64{}
	var from peer.ID
	for page := 0; ; page++ {
		part, lo, to := helloVV(vv, from, 4)
		if lo != from || len(part) > 4 {
			t.Fatalf("page %d: from %q (asked %q), %d authors", page, lo, from, len(part))
		}
		h := &Hello{Room: testRoom, VV: part, From: lo, To: to}
		if err := h.validate(); err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		for a, s := range part {
			if _, dup := seen[a]; dup {
				t.Fatalf("page %d lists %s again", page, a)
			}
			seen[a] = s
		}
		// Every author between the bounds is listed: none falls between pages.
		for a := range vv {
			if h.Covers(a) {
				if _, ok := part[a]; !ok {
					t.Fatalf("page %d covers %s but does not list it", page, a)
				}
			}
		}
		if to == "" {
			if page != 2 {
				t.Fatalf("%d pages of 4 for 10 authors, want 3", page+1)
			}
			break
		}
		from = to
	}
	if !maps.Equal(seen, vv) {
		t.Fatalf("the pages list %d of %d authors", len(seen), len(vv))
	}
}

// The largest Hello a node sends (a page of MaxVV authors of a room with
// more, each with the largest seq, MaxHeads heads and MaxWant wanted IDs)
// fits in a frame and reads back whole.
func TestLargestHelloFits(t *testing.T) {
	vv := map[peer.ID]uint64{}
	seed := make([]byte, 32)
	for i := range MaxVV + 1 {
		binary.BigEndian.PutUint32(seed, uint32(i))
		priv, _, err := crypto.GenerateEd25519Key(bytes.NewReader(seed))
		if err != nil {
			t.Fatal(err)
		}
		a, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		vv[a] = 1<<63 - 1
	}
	h := &Hello{Room: testRoom, Limit: SyncLimit}
	h.VV, h.From, h.To = helloVV(vv, "", MaxVV)
	if len(h.VV) != MaxVV || h.To == "" {
		t.Fatalf("the first page lists %d authors, up to %q", len(h.VV), h.To)
	}
	for i := range MaxHeads {
		h.Heads = append(h.Heads, fakeID(i))
	}
	for i := range MaxWant {
		h.Want = append(h.Want, fakeID(MaxHeads+i))
	}
	var buf bytes.Buffer
	if err := WriteFrame(&buf, h); err != nil {
		t.Fatalf("the largest Hello: %v", err)
	}
	size := buf.Len()
	got, err := ReadHello(&buf, MaxFrame)
	if err != nil {
		t.Fatalf("the largest Hello (%d bytes) read back: %v", size, err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("the largest Hello read back as %d authors, %d heads, %d wanted", len(got.VV), len(got.Heads), len(got.Want))
	}
	t.Logf("the largest Hello: %d bytes of %d", size, MaxFrame)
}
