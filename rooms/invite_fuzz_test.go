package rooms

import (
	"bytes"
	"testing"
)

// FuzzReadInvite feeds arbitrary bytes to the invite notice reader, as a
// hostile peer on /parley/invite/1 would. The seeds include a notice that
// tells a room back (create and own events beside the invite), and every
// event a notice carries is decoded.
func FuzzReadInvite(f *testing.F) {
	priv, me := testKey(f, 1)
	_, other := testKey(f, 2)
	create, cid := mustSeal(f, priv, createEvent(me))
	invite, _ := mustSeal(f, priv, &Event{V: Version, Room: testRoom, Author: me, Agent: "human", Seq: 2,
		Parents: []ID{cid}, Depth: 2, Kind: KindInvite, Body: []byte(other)})
	own, _ := mustSeal(f, priv, messageEvent(me, "mine", cid))
	for _, n := range []inviteNotice{
		{Room: "aaaaaaaaaaaaaaaaaaaaaaaaaa", Name: "x", Event: []byte{0xa0}},
		{Room: string(testRoom), Name: "r", Event: invite},
		{Room: string(testRoom), Event: invite, Create: create, Own: own},
		{Room: string(testRoom), Event: create, Own: own},
	} {
		var b bytes.Buffer
		_ = writeCBORFrame(&b, n)
		f.Add(b.Bytes())
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x01, 0xa0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var n inviteNotice
		if err := readCBORFrame(bytes.NewReader(raw), maxInviteFrame, &n); err != nil {
			return
		}
		for _, w := range [][]byte{n.Event, n.Create, n.Own} {
			if len(w) > 0 {
				_, _, _ = Decode(w)
			}
		}
	})
}

// FuzzHeld feeds arbitrary bytes to the readers of /parley/held/1's ask
// (as a hostile asker would send) and answer (as a hostile member would).
func FuzzHeld(f *testing.F) {
	for _, v := range []any{
		heldAsk{Rooms: []string{string(testRoom), "aaaaaaaaaaaaaaaaaaaaaaaaaa"}},
		heldAnswer{Lacks: []string{string(testRoom)}},
		heldAnswer{},
	} {
		var b bytes.Buffer
		_ = writeCBORFrame(&b, v)
		f.Add(b.Bytes())
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x01, 0xa0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ask heldAsk
		_ = readCBORFrame(bytes.NewReader(raw), maxHeldFrame, &ask)
		var ans heldAnswer
		_ = readCBORFrame(bytes.NewReader(raw), maxHeldFrame, &ans)
	})
}
