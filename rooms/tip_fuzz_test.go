package rooms

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

func sampleTip(tb testing.TB) tip {
	_, a := testKey(tb, 1)
	_, b := testKey(tb, 2)
	return tip{
		arrival: 512,
		vv:      map[peer.ID]uint64{a: 300, b: 7},
		heads:   map[ID]uint64{fakeID(1): 610, fakeID(2): 609},
	}
}

// TestTipRoundTrip: a tip decodes to what was encoded, and has one
// encoding whatever the maps' order.
func TestTipRoundTrip(t *testing.T) {
	for _, want := range []tip{sampleTip(t), {arrival: 0, vv: map[peer.ID]uint64{}, heads: map[ID]uint64{}}} {
		b := want.marshal()
		got, err := unmarshalTip(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.arrival != want.arrival || !maps.Equal(got.vv, want.vv) || !maps.Equal(got.heads, want.heads) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		for range 20 {
			if !bytes.Equal(want.marshal(), b) {
				t.Fatal("a tip encodes two ways")
			}
		}
	}
	good := sampleTip(t).marshal()
	for name, b := range map[string][]byte{
		"empty":         nil,
		"cut short":     good[:len(good)-1],
		"trailing byte": append(bytes.Clone(good), 0),
		"huge count":    append(append(bytes.Clone(good[:8]), 0xff, 0xff, 0xff, 0xff), good[12:]...),
	} {
		if _, err := unmarshalTip(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", name, err)
		}
	}
}

// FuzzTip: any bytes decode to a tip or ErrCorrupt, never a panic, and a
// tip decoded encodes to the same bytes.
func FuzzTip(f *testing.F) {
	f.Add(sampleTip(f).marshal())
	f.Add(tip{}.marshal())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		tp, err := unmarshalTip(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v is not ErrCorrupt", err)
			}
			return
		}
		if again := tp.marshal(); !bytes.Equal(again, b) {
			t.Fatalf("decoded %x, encodes as %x", b, again)
		}
	})
}
