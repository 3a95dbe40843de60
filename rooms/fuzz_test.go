package rooms

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"reflect"
	"slices"
	"testing"
)

func FuzzDecodeEvent(f *testing.F) {
	priv, me := testKey(f, 1)
	_, other := testKey(f, 2)
	cw, cid := mustSeal(f, priv, createEvent(me))
	f.Add(cw)
	reply := fakeID(1)
	for _, e := range []*Event{
		messageEvent(me, "hello", cid),
		messageEvent(me, "", cid, fakeID(2), fakeID(3)),
		{Room: testRoom, Author: me, Agent: "human", Seq: 3, Parents: []ID{cid}, Depth: 2, Kind: KindInvite, Body: []byte(other)},
		{Room: testRoom, Author: me, Agent: "x", Seq: 4, Parents: []ID{cid}, Depth: 5, Kind: KindMessage,
			Body: []byte("re"), ReplyTo: &reply, To: "bob@" + other.String()},
	} {
		w, _ := mustSeal(f, priv, e)
		f.Add(w)
	}
	f.Add([]byte{})
	f.Add([]byte{0xa2, 0x01, 0x40, 0x02, 0x40})
	f.Fuzz(func(t *testing.T, wire []byte) {
		e, id, err := Decode(wire)
		if err != nil {
			if e != nil {
				t.Fatal("event returned with an error")
			}
			return
		}
		if id != sha256.Sum256(wire) {
			t.Fatal("id is not the hash of the wire")
		}
		// One event, one encoding: the decoded event encodes to the very
		// payload that was signed.
		var s signedEvent
		if err := eventDec.Unmarshal(wire, &s); err != nil {
			t.Fatal(err)
		}
		again, err := encMode.Marshal(e.payload())
		if err != nil || !bytes.Equal(again, s.Payload) {
			t.Fatalf("decoded event re-encodes differently: %v", err)
		}
		if err := e.validate(); err != nil {
			t.Fatalf("decoded event is invalid: %v", err)
		}
	})
}

// FuzzDecodePayload fuzzes the payload under a valid signature, so that
// mutations reach the field checks instead of failing at the signature.
func FuzzDecodePayload(f *testing.F) {
	priv, me := testKey(f, 1)
	_, other := testKey(f, 2)
	for _, e := range []*Event{
		createEvent(me),
		messageEvent(me, "hello", fakeID(1), fakeID(2)),
		{Room: testRoom, Author: me, Agent: "human", Seq: 3, Parents: []ID{fakeID(1)}, Depth: 2, Kind: KindInvite, Body: []byte(other)},
	} {
		e.V = Version
		p, err := encMode.Marshal(e.payload())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > MaxWire {
			return
		}
		wire := signPayload(t, priv, payload)
		e, _, err := Decode(wire)
		if err != nil {
			return
		}
		if e.Author != me {
			t.Fatalf("accepted author %s", e.Author)
		}
		again, err := encMode.Marshal(e.payload())
		if err != nil || !bytes.Equal(again, payload) {
			t.Fatalf("decoded event re-encodes differently: %v", err)
		}
		if err := e.validate(); err != nil {
			t.Fatalf("decoded event is invalid: %v", err)
		}
	})
}

func FuzzReadHello(f *testing.F) {
	for _, h := range []*Hello{sampleHello(f), {Room: testRoom}, {Room: testRoom, Want: []ID{fakeID(1)}, Limit: 1}, rangedHello(f)} {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, h); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes(), 0)
	}
	f.Add([]byte{0x80, 0x80, 0x01}, 0)
	f.Add([]byte{0x03, 0xa1, 0x01, 0x60}, 10)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		h, err := ReadHello(bytes.NewReader(in), max)
		if err != nil {
			if h != nil {
				t.Fatal("hello returned with an error")
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) &&
				!errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteFrame(&buf, h); err != nil {
			t.Fatalf("accepted hello cannot be written: %v", err)
		}
		h2, err := ReadHello(&buf, 0)
		if err != nil || !reflect.DeepEqual(h, h2) {
			t.Fatalf("hello round trip: %v\n%+v\n%+v", err, h, h2)
		}
	})
}

func FuzzReadBatch(f *testing.F) {
	priv, me := testKey(f, 1)
	w, _ := mustSeal(f, priv, createEvent(me))
	for _, b := range []Batch{{Events: [][]byte{w}}, {Events: [][]byte{w, {1}}}, {End: true}, {End: true, More: true}} {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, b); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0x01, 0xa0})
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := ReadBatch(bytes.NewReader(in))
		if err != nil {
			if b != nil {
				t.Fatal("batch returned with an error")
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) &&
				!errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteFrame(&buf, b); err != nil {
			t.Fatalf("accepted batch cannot be written: %v", err)
		}
		b2, err := ReadBatch(&buf)
		if err != nil || !reflect.DeepEqual(b, b2) {
			t.Fatalf("batch round trip: %v", err)
		}
	})
}

func BenchmarkSeal(b *testing.B) {
	priv, me := testKey(b, 1)
	e := messageEvent(me, string(bytes.Repeat([]byte("a"), 1<<10)), fakeID(1), fakeID(2))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Seal(priv, e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	priv, me := testKey(b, 1)
	wire, _ := mustSeal(b, priv, messageEvent(me, string(bytes.Repeat([]byte("a"), 1<<10)), fakeID(1), fakeID(2)))
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(wire); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzEventFastPath: the fast path of Decode (eventwire.go) takes a
// payload or wrapper only when the general decoder decodes it to the same
// value and finds it canonical; and it takes every canonical payload of a
// well-formed event, so honest events never pay for the general one.
func FuzzEventFastPath(f *testing.F) {
	priv, me := testKey(f, 1)
	_, other := testKey(f, 2)
	reply := fakeID(3)
	for _, e := range []*Event{
		createEvent(me),
		messageEvent(me, "hello", fakeID(1), fakeID(2)),
		{Room: testRoom, Author: me, Agent: "human", Seq: 3, Parents: []ID{fakeID(1)}, Depth: 2, Kind: KindInvite, Body: []byte(other)},
		{Room: testRoom, Author: me, Agent: "x", Seq: 300, Parents: []ID{fakeID(1)}, Depth: 70000, Kind: KindAsk, Time: 1 << 41,
			Body: bytes.Repeat([]byte("é"), 200), ReplyTo: &reply, To: "bob@" + other.String()},
	} {
		e.V = Version
		p, err := encMode.Marshal(e.payload())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
		w, _ := mustSeal(f, priv, e)
		f.Add(w)
	}
	f.Add([]byte{0xa2, 0x01, 0x40, 0x02, 0x40})
	f.Fuzz(func(t *testing.T, in []byte) {
		// As a payload.
		fp, fok := parsePayload(in)
		var gp eventPayload
		gerr := eventDec.Unmarshal(in, &gp)
		if gerr == nil {
			gerr = canonical(in, gp)
		}
		if fok {
			if gerr != nil {
				t.Fatalf("fast path took a payload the general decoder refuses: %v", gerr)
			}
			if !reflect.DeepEqual(fp, gp) {
				t.Fatalf("fast path decoded\n%+v\ngeneral decoder\n%+v", fp, gp)
			}
		} else if gerr == nil && gp.Time >= 0 {
			if _, err := gp.event(); err == nil && !slices.ContainsFunc(gp.Parents, func(b []byte) bool { return len(b) != len(ID{}) }) {
				t.Fatalf("fast path refused a canonical payload: %+v", gp)
			}
		}
		// As a wrapper.
		payload, sig, fok := parseSigned(in)
		var s signedEvent
		gerr = eventDec.Unmarshal(in, &s)
		if gerr == nil {
			gerr = canonical(in, s)
		}
		switch {
		case fok && gerr != nil:
			t.Fatalf("fast path took a wrapper the general decoder refuses: %v", gerr)
		case fok && (!bytes.Equal(payload, s.Payload) || !bytes.Equal(sig, s.Sig)):
			t.Fatal("fast path and general decoder read different wrappers")
		case !fok && gerr == nil:
			t.Fatalf("fast path refused a canonical wrapper")
		}
	})
}
