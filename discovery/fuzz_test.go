package discovery

import (
	"bytes"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
)

// FuzzDecodeCard fuzzes card wire bytes. With resign set, the input is
// taken as a payload and signed by the test key, so that mutations reach
// the field checks instead of failing at the signature.
func FuzzDecodeCard(f *testing.F) {
	priv, me := testKey(f, 1)
	w := mustSealCard(f, priv, testCard(me))
	f.Add(w, false)
	f.Add(mustSealCard(f, priv, &Card{Peer: me, Agent: "x", Seq: 1, Expires: 1}), false)
	f.Add(mustMarshal(f, testCard(me).payload()), true)
	f.Add([]byte{}, false)
	f.Add([]byte{0xa2, 0x01, 0x40, 0x02, 0x40}, false)
	f.Add(mustSealCard(f, priv, &Card{Peer: me, Agent: "x", Seq: 1, Expires: 1, Member: []byte("a certificate")}), false)
	f.Fuzz(func(t *testing.T, data []byte, resign bool) {
		wire := data
		if resign {
			wire = signRaw(t, priv, identity.DomainAgentCard, data)
		}
		c, err := DecodeCard(wire)
		if err != nil {
			if c != nil {
				t.Fatal("card returned with an error")
			}
			return
		}
		// One card, one encoding: the decoded card seals to the same bytes
		// (Ed25519 signatures are deterministic) when it is ours.
		if c.Peer == me {
			again, err := SealCard(priv, c)
			if err != nil || !bytes.Equal(again, wire) {
				t.Fatalf("decoded card re-seals differently: %v", err)
			}
		}
		if err := c.validate(); err != nil {
			t.Fatalf("decoded card is invalid: %v", err)
		}
	})
}

// FuzzDecodePresence fuzzes presence wire bytes, and with resign set,
// signed payloads as FuzzDecodeCard does.
func FuzzDecodePresence(f *testing.F) {
	priv, me := testKey(f, 1)
	w, err := SealPresence(priv, testPresence(me))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(w, false)
	f.Add(mustMarshal(f, testPresence(me).payload()), true)
	f.Add(mustMarshal(f, (&Presence{Peer: me, Seq: 1}).payload()), true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, data []byte, resign bool) {
		wire := data
		if resign {
			wire = signRaw(t, priv, identity.DomainPresence, data)
		}
		p, err := DecodePresence(wire)
		if err != nil {
			if p != nil {
				t.Fatal("presence returned with an error")
			}
			return
		}
		if p.Peer == me {
			again, err := SealPresence(priv, p)
			if err != nil || !bytes.Equal(again, wire) {
				t.Fatalf("decoded presence re-seals differently: %v", err)
			}
		}
		if err := p.validate(); err != nil {
			t.Fatalf("decoded presence is invalid: %v", err)
		}
	})
}

// FuzzValidate fuzzes keys and values through Validate and Select.
func FuzzValidate(f *testing.F) {
	priv, me := testKey(f, 1)
	key := CardKey(me, "claude-api")
	w := mustSealCard(f, priv, testCard(me))
	f.Add(key, w)
	f.Add(CardKey(me, "codex"), w)
	f.Add("/parley-agent/x/y", w)
	f.Add(key, []byte("junk"))
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		err := testValidator.Validate(key, value)
		i, serr := testValidator.Select(key, [][]byte{[]byte("junk"), value})
		if (err == nil) != (serr == nil) {
			t.Fatalf("Validate says %v but Select says %v", err, serr)
		}
		if err != nil {
			return
		}
		if i != 1 {
			t.Fatalf("Select picked %d", i)
		}
		c, err := DecodeCard(value)
		if err != nil {
			t.Fatalf("valid value does not decode: %v", err)
		}
		if CardKey(c.Peer, c.Agent) != key {
			t.Fatalf("valid under %q but the card's key is %q", key, c.Key())
		}
		if c.Expires <= testNow.UnixMilli() || c.Expires > testNow.Add(MaxCardTTL+MaxClockSkew).UnixMilli() {
			t.Fatalf("valid card expires at %s", time.UnixMilli(c.Expires))
		}
	})
}
