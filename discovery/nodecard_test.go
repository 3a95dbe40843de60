package discovery

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parley-mesh/parley/identity"
)

func TestNodeCardRoundTripAndRefusals(t *testing.T) {
	priv, me := testKey(t, 1)
	_, other := testKey(t, 2)
	wire, err := SealNodeCard(priv, &NodeCard{Peer: me, Handle: "alice", Seq: 7})
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeNodeCard(wire)
	if err != nil || c.Peer != me || c.Handle != "alice" || c.Seq != 7 {
		t.Fatalf("decoded %+v, %v", c, err)
	}
	for _, bad := range []*NodeCard{
		{Peer: me, Handle: "", Seq: 1},
		{Peer: me, Handle: "a\x1b]0;x\x07", Seq: 1},
		{Peer: me, Handle: " alice", Seq: 1},
		{Peer: me, Handle: "alice", Seq: 0},
		{Peer: other, Handle: "alice", Seq: 1},
	} {
		if _, err := SealNodeCard(priv, bad); err == nil {
			t.Errorf("sealed %+v", bad)
		}
	}
	// A handle with a character that shows nothing but is printable (a
	// Hangul filler) is taken from the wire: earlier Parley accepted such
	// handles, and their nodes keep their names, shown escaped. Code
	// points that are not printable (unassigned, private use), which the
	// user's own handle may not hold either, are refused both ways.
	for _, h := range []string{"bob\u3164", "\u115fbob", "bob\u2800", "bob\uffa0", "a\u034flice"} {
		w := signRaw(t, priv, identity.DomainNodeCard, mustMarshal(t, nodeCardPayload{V: 1, Peer: []byte(me), Handle: h, Seq: 1}))
		if c, err := DecodeNodeCard(w); err != nil || c.Handle != h {
			t.Errorf("an older node's card with handle %+q: %v", h, err)
		}
	}
	for _, h := range []string{"alice\u0378", "alice\ue000", "alice\U000f0000", "bob\u3000smith"} {
		if _, err := SealNodeCard(priv, &NodeCard{Peer: me, Handle: h, Seq: 1}); err == nil {
			t.Errorf("sealed a node card with handle %+q", h)
		}
		w := signRaw(t, priv, identity.DomainNodeCard, mustMarshal(t, nodeCardPayload{V: 1, Peer: []byte(me), Handle: h, Seq: 1}))
		if _, err := DecodeNodeCard(w); !errors.Is(err, ErrMalformed) {
			t.Errorf("a node card with handle %+q: %v", h, err)
		}
	}
	// Another node's signature over this node's payload is refused.
	p := mustMarshal(t, nodeCardPayload{V: 1, Peer: []byte(me), Handle: "mallory", Seq: 9})
	privOther, _ := testKey(t, 2)
	forged := signRaw(t, privOther, identity.DomainNodeCard, p)
	if _, err := DecodeNodeCard(forged); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("forged node card: %v", err)
	}
	// An agent card's signature does not make a node card.
	if _, err := DecodeNodeCard(signRaw(t, priv, identity.DomainAgentCard, p)); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("a node card signed in another domain: %v", err)
	}
}

// FuzzDecodeNodeCard fuzzes node card wire bytes; with resign the input is
// a payload signed by the test key, so mutations reach the field checks.
func FuzzDecodeNodeCard(f *testing.F) {
	priv, me := testKey(f, 1)
	w, err := SealNodeCard(priv, &NodeCard{Peer: me, Handle: "alice", Seq: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(w, false)
	f.Add(mustMarshal(f, nodeCardPayload{V: 1, Peer: []byte(me), Handle: "bob", Seq: 2}), true)
	f.Add([]byte{}, false)
	f.Add(mustMarshal(f, nodeCardPayload{V: 1, Peer: []byte(me), Handle: "carol", Seq: 3, Member: []byte("a certificate")}), true)
	f.Fuzz(func(t *testing.T, data []byte, resign bool) {
		wire := data
		if resign {
			wire = signRaw(t, priv, identity.DomainNodeCard, data)
		}
		c, err := DecodeNodeCard(wire)
		if err != nil {
			if c != nil {
				t.Fatal("card returned with an error")
			}
			return
		}
		if c.Peer == me {
			again, err := SealNodeCard(priv, c)
			if err != nil || !bytes.Equal(again, wire) {
				t.Fatalf("decoded node card re-seals differently: %v", err)
			}
		}
	})
}
