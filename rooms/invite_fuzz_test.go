package rooms

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/identity"
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
	founded, fOwn, fLeave := foundedRoom(f)
	for _, n := range []inviteNotice{
		{Room: "aaaaaaaaaaaaaaaaaaaaaaaaaa", Name: "x", Event: []byte{0xa0}},
		{Room: string(testRoom), Name: "r", Event: invite},
		{Room: string(testRoom), Event: invite, Create: create, Own: own},
		{Room: string(testRoom), Event: create, Own: own},
		{Room: string(founded.Room), Event: founded.Event, Own: fOwn},
		{Room: string(founded.Room), Event: founded.Event, Own: fLeave},
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
		// Told back by other to me: whatever is taken proves it by my
		// own event there, not a leave, and names other as the inviter.
		id, err := identity.ParseRoomID(n.Room)
		if err != nil || len(n.Own) == 0 {
			return
		}
		ev, err := (&Manager{self: me}).checkTellBack(id, n, other)
		if err != nil {
			return
		}
		own, ownID, err := Decode(n.Own)
		if err != nil || own.Author != me || own.Room != id || ownID != ev.own {
			t.Fatalf("taken with an own event that is not mine in the room: %v", err)
		}
		if target, _, err := own.LeaveTarget(); own.Kind == KindLeave && (err != nil || target == "" || target == me) {
			t.Fatal("taken with my leave as evidence")
		}
		if ev.meta.Creator != me && ev.meta.InvitedBy != other {
			t.Fatalf("the inviter recorded is %s, not the teller", ev.meta.InvitedBy)
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

// foundedRoom returns a notice telling key 1's node back a room it created
// (the create event founds the room), and two own events of it there: a
// message and its leave.
func foundedRoom(tb testing.TB) (n inviteNotice, own, leave []byte) {
	priv, me := testKey(tb, 1)
	nonce := bytes.Repeat([]byte{7}, roomNonceLen)
	id := DeriveRoomID(me, nonce)
	create, cid := mustSeal(tb, priv, &Event{V: Version, Room: id, Author: me, Agent: "human", Seq: 1, Depth: 1,
		Time: 1_700_000_000_000, Kind: KindCreate, Body: createBody(nonce, "r", "")})
	own, oid := mustSeal(tb, priv, &Event{V: Version, Room: id, Author: me, Agent: "human", Seq: 2, Parents: []ID{cid},
		Depth: 2, Time: 1_700_000_000_001, Kind: KindMessage, Body: []byte("mine")})
	leave, _ = mustSeal(tb, priv, &Event{V: Version, Room: id, Author: me, Agent: "human", Seq: 3, Parents: []ID{oid},
		Depth: 3, Time: 1_700_000_000_002, Kind: KindLeave, Body: leaveBody(3, me)})
	return inviteNotice{Room: string(id), Event: create}, own, leave
}

// TestCheckTellBackEvidence: a notice of a room this node created is
// taken with its message as its own event, and refused with its leave.
func TestCheckTellBackEvidence(t *testing.T) {
	n, own, leave := foundedRoom(t)
	_, me := testKey(t, 1)
	_, other := testKey(t, 2)
	m := &Manager{self: me}
	id := identity.RoomID(n.Room)
	n.Own = own
	if ev, err := m.checkTellBack(id, n, other); err != nil || ev.meta.Creator != me || ev.meta.InvitedBy != "" {
		t.Fatalf("a right notice: %+v, %v", ev, err)
	}
	n.Own = leave
	if _, err := m.checkTellBack(id, n, other); !errors.Is(err, ErrInviteRefused) || !strings.Contains(err.Error(), "is its leave") {
		t.Fatalf("a notice with this node's leave: %v, want it refused", err)
	}
}
